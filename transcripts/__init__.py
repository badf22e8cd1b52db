"""Agent transcripts: a parser per agent CLI, one normalized model (``transcripts.model``),
secret redaction, and the standalone HTML page rendered from them."""
