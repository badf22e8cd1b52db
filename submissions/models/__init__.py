from submissions.models.evaluations import BaselineTiming, Evaluation, ShapeResult
from submissions.models.registry import HardwareTarget, Harness, LanguageModel, Problem
from submissions.models.runs import Run, Solution, TranscriptFile
from submissions.models.tokens import ApiToken

__all__ = [
    "ApiToken",
    "BaselineTiming",
    "Evaluation",
    "HardwareTarget",
    "Harness",
    "LanguageModel",
    "Problem",
    "Run",
    "ShapeResult",
    "Solution",
    "TranscriptFile",
]
