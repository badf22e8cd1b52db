"""What the synthetic history knows of a problem's references beyond the registry: whether the
engine's deck gives it a library implementation, and for kernel-to-kernel problems how their
starter fares on the held-out shapes and how a run compares with it there."""

import functools
import random
from pathlib import Path

from runners import schema
from runners.schema import EvaluationResult, StarterComparison
from submissions.models import Problem

# The engine's built-in deck, read as files: the platform imports no engine module but the schema.
DECK = Path(schema.__file__).parent / "problems"
# The share of held-out shapes a naive starter gets wrong (a case it never handled).
STARTER_MISS = 0.08


@functools.cache
def _deck_has_library(slug: str) -> bool:
    reference = DECK / slug / "reference.py"
    # The engine times reference.Library where the reference module defines one.
    return reference.is_file() and "class Library" in reference.read_text(encoding="utf-8")


def has_library(problem: Problem) -> bool:
    """Whether the deck's problem of that name has a library implementation (cuBLAS, SDPA...)."""
    return _deck_has_library(problem.slug)


def has_starter(problem: Problem) -> bool:
    """Kernel-to-kernel problems hand the agent a starter kernel; the others have none."""
    return problem.category != Problem.Category.PYTORCH_TO_KERNEL


def compare_with_starter(problem: Problem, result: EvaluationResult) -> None:
    """Marks the starter's correctness on each held-out shape the grading checked, and the
    run's quadrant against it; nothing when the problem has no starter or the held-out gate
    never ran. The starter's misses are fixed per problem and shape, as a real starter's are."""
    gate = result.gate("correct_hidden")
    if not has_starter(problem) or gate is None or gate.status == "skip":
        return
    checked = [s for s in result.shapes if s.set == "hidden" and s.correct is not None]
    for shape in checked:
        miss = random.Random(f"starter:{problem.slug}:{shape.index}").random() < STARTER_MISS
        shape.starter_correct = not miss
    result.starter = _comparison(result, checked)


def _comparison(result: EvaluationResult, checked: list) -> StarterComparison:
    starter_passes = all(shape.starter_correct for shape in checked)
    run_passes = result.correct_hidden
    quadrant = {
        (True, True): "both_pass",
        (True, False): "regression",
        (False, True): "improvement",
        (False, False): "both_fail",
    }[starter_passes, run_passes]
    kept = [shape.correct for shape in checked if shape.starter_correct]
    return StarterComparison(
        starter_hidden_correct=starter_passes,
        quadrant=quadrant,
        conditional_hidden_correct=sum(kept) / len(kept) if kept else None,
    )
