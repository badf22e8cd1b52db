from submissions.models.audit import Annotation, RetiredProblemVersion, RunForReview
from submissions.models.boards import BoardSnapshot
from submissions.models.evaluations import BaselineTiming, Evaluation, ShapeResult
from submissions.models.registry import (
    HardwareTarget,
    Harness,
    LanguageModel,
    ModelPrice,
    Problem,
)
from submissions.models.runs import Run, Solution, TranscriptFile
from submissions.models.tokens import ApiToken

__all__ = [
    "Annotation",
    "ApiToken",
    "BaselineTiming",
    "BoardSnapshot",
    "Evaluation",
    "HardwareTarget",
    "Harness",
    "LanguageModel",
    "ModelPrice",
    "Problem",
    "RetiredProblemVersion",
    "Run",
    "RunForReview",
    "ShapeResult",
    "Solution",
    "TranscriptFile",
]
