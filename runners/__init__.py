"""Kernel Arena evaluation engine: problem deck, gates, sandbox, timing, scoring and CLI.

Importing the package imports nothing heavy; torch is loaded only by the modules that grade.
"""

import logging

ENGINE_VERSION = "0.2.0"
# Progress of a grade, step by step (`python -m runners evaluate --progress` shows it on stderr;
# a GPU worker's log takes it): a grade cut short by a machine's limit shows how far it got.
progress = logging.getLogger("runners.progress")
