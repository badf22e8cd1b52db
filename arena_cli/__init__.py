"""``arena``: the command people run beside their agent. It talks HTTP to the platform and
never imports Django; ``evaluate``, ``pack`` and ``render`` load the engine or the transcript
tools only when called."""
