from submissions.models.audit import Annotation, RetiredProblemVersion, RunForReview
from submissions.models.boards import BoardSnapshot
from submissions.models.campaigns import Campaign, CampaignLaunch
from submissions.models.evaluations import BaselineTiming, Evaluation, ShapeResult
from submissions.models.lineage import LineageVersion, RunLineage
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
    "Campaign",
    "CampaignLaunch",
    "Evaluation",
    "HardwareTarget",
    "Harness",
    "LanguageModel",
    "LineageVersion",
    "ModelPrice",
    "Problem",
    "RetiredProblemVersion",
    "Run",
    "RunForReview",
    "RunLineage",
    "ShapeResult",
    "Solution",
    "TranscriptFile",
]
