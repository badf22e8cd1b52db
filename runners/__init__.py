"""Kernel Arena evaluation engine: problem deck, gates, sandbox, timing, scoring and CLI.

Importing the package imports nothing heavy; torch is loaded only by the modules that grade.
"""

ENGINE_VERSION = "0.2.0"
