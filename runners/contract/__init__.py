"""The engine's contract with the platform: the only part of ``runners`` that ``submissions`` and
``arena_web`` import (an allow-list import contract in ``pyproject.toml`` holds them to it).

It names what the two sides agree on, each fact written once in the engine:

- the result of a grade and its parts, the verdicts and the gates (``runners.schema``: the JSON
  a worker stores, docs/architecture.md "Engine ⇄ platform");
- a run's aggregates over its shapes, the score and held-out score it ranks by and its
  speedups (``runners.scoring.run_aggregates``), which the engine computes when it grades and
  the platform recomputes stored grades by after a rule change (``manage.py rescore``);
- the reference timings' cache keys (``runners.schema.BaselineKey``);
- what a solution is made of: its file name, sidecars and their limits
  (``runners.solution_files``).

The hardware table and the problem deck reach the platform as the JSON of ``python -m runners
hardware`` and ``python -m runners problems``, never as imports; the engine itself runs as a
``python -m runners evaluate`` process.
"""

from runners.schema import (
    BASELINE_KINDS,
    EXTRA_PROBLEMS_ENV,
    QUADRANTS,
    BaselineKey,
    EvaluationResult,
    GateResult,
    ProblemInfo,
    ShapeResult,
    StarterComparison,
    Verdict,
    parse_baseline_key,
)
from runners.scoring import RunAggregates, run_aggregates
from runners.solution_files import (
    MAX_SIDECAR_BYTES,
    MAX_SIDECARS,
    SIDECAR_SUFFIXES,
    SOLUTION_NAME,
    SolutionFilesError,
    check_sidecars,
    content_sha256,
    split_sidecars,
    write_solution_folder,
)

__all__ = [
    "BASELINE_KINDS",
    "EXTRA_PROBLEMS_ENV",
    "MAX_SIDECARS",
    "MAX_SIDECAR_BYTES",
    "QUADRANTS",
    "SIDECAR_SUFFIXES",
    "SOLUTION_NAME",
    "BaselineKey",
    "EvaluationResult",
    "GateResult",
    "ProblemInfo",
    "RunAggregates",
    "ShapeResult",
    "SolutionFilesError",
    "StarterComparison",
    "Verdict",
    "check_sidecars",
    "content_sha256",
    "parse_baseline_key",
    "run_aggregates",
    "split_sidecars",
    "write_solution_folder",
]
