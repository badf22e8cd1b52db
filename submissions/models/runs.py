"""Uploaded runs and the files they carry."""

import ast
import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import models
from django.urls import reverse

from submissions.models.registry import HardwareTarget, Harness, LanguageModel, Problem


def solution_ast_hash(code: str) -> str:
    """sha256 of the code's syntax tree with positions and docstrings left out; "" when it does
    not parse. Reformatting, renaming nothing and re-commenting keep the hash."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return ""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def folder_ast_hash(code: str, sidecars: Sequence[tuple[str, str]]) -> str:
    """solution_ast_hash for a solution with native sources beside it, given as (name, sha256):
    the same solution.py with other kernels is another solution."""
    python = solution_ast_hash(code)
    if not python or not sidecars:
        return python
    return hashlib.sha256(json.dumps([python, sorted(sidecars)]).encode()).hexdigest()


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def solution_path(instance: "Solution", filename: str) -> str:
    return f"solutions/{instance.sha256[:2]}/{instance.sha256}.py"


def sidecar_path(sha256: str, name: str) -> str:
    """Where a solution's sidecar is stored: a folder named by the solution's hash."""
    return f"solutions/{sha256[:2]}/{sha256}/{name}"


def transcript_path(instance: "TranscriptFile", filename: str) -> str:
    # Generated names only: the uploaded relative name lives in the ``name`` column.
    return f"runs/{instance.run.uuid}/transcripts/{instance.sha256[:16]}-{uuid.uuid4().hex[:8]}"


def normalized_transcript_path(instance: "Run", filename: str) -> str:
    return f"runs/{instance.uuid}/normalized.json.gz"


@dataclass(frozen=True)
class Sidecar:
    """A native source uploaded beside solution.py (``runners.solution_files``); one entry of
    ``Solution.sidecars``."""

    name: str
    size: int
    sha256: str
    path: str  # in the default storage

    @property
    def code(self) -> str:
        with default_storage.open(self.path, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")

    def to_dict(self) -> dict:
        return asdict(self)


class Solution(models.Model):
    """A solution, stored once per distinct content: solution.py and the native sources beside
    it."""

    # runners.solution_files.content_sha256: of solution.py alone when it has no sidecars
    sha256 = models.CharField(max_length=64)
    file = models.FileField(upload_to=solution_path, max_length=200)  # solution.py
    size = models.PositiveIntegerField()  # of solution.py
    # Sidecar.to_dict() of each native source, in name order; the solution never changes, so
    # pages list them without a query of their own
    sidecars = models.JSONField(default=list, blank=True)
    # sha256 of the code's syntax tree without positions or docstrings: near-identical solutions
    # (reformatted, re-commented) share it; empty when the code does not parse
    ast_hash = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sha256"], name="solution_unique_sha256")]
        indexes = [
            # integrity: other submitters' runs with the same normalized solution
            models.Index(fields=["ast_hash"], name="solution_ast_hash_idx"),
        ]

    def __str__(self) -> str:
        return self.sha256[:12]

    @property
    def code(self) -> str:
        with self.file.open("rb") as handle:
            return handle.read().decode("utf-8", errors="replace")

    @property
    def sidecar_files(self) -> list[Sidecar]:
        return [Sidecar(**entry) for entry in self.sidecars]


class RunQuerySet(models.QuerySet):
    def published(self) -> "RunQuerySet":
        """What the public sees in lists: published, and not invalidated by staff."""
        return self.filter(published=True, invalidated_at__isnull=True)

    def visible_to(self, user) -> "RunQuerySet":
        if user.is_staff:
            return self
        # an invalidated run stays readable at its URL, with the reason on top
        if user.is_authenticated:
            return self.filter(models.Q(published=True) | models.Q(submitter=user))
        return self.filter(published=True)


# A run's figures from its metadata or transcript (``figure_sources`` says which).
RUN_FIGURES = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "turns",
    "wall_time_s",
    "cost_usd",
)


class Run(models.Model):
    class Status(models.TextChoices):
        RECEIVED = "received", "Received"
        QUEUED = "queued", "Queued"
        EVALUATING = "evaluating", "Evaluating"
        EVALUATED = "evaluated", "Evaluated"
        FAILED = "failed", "Failed"

    class TranscriptStatus(models.TextChoices):
        PENDING = "pending", "Pending"
        PARSED = "parsed", "Parsed"
        FAILED = "failed", "Failed"
        NONE = "none", "None uploaded"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="runs")
    problem_version = models.CharField(max_length=64)
    language_model = models.ForeignKey(LanguageModel, on_delete=models.PROTECT, related_name="runs")
    harness = models.ForeignKey(Harness, on_delete=models.PROTECT, related_name="runs")
    hardware = models.ForeignKey(HardwareTarget, on_delete=models.PROTECT, related_name="runs")
    effort = models.CharField(max_length=50, blank=True)
    submitter = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="runs",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    solution = models.ForeignKey(
        Solution, on_delete=models.PROTECT, null=True, blank=True, related_name="runs"
    )
    content_key = models.CharField(max_length=64, editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED)
    published = models.BooleanField(default=False)
    # Taken off every board by staff (services.audit), kept readable; restorable.
    invalidated_at = models.DateTimeField(null=True, blank=True)
    invalidation_reason = models.TextField(blank=True)
    invalidated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    # Automatic integrity flags of the run and its headline grade (services.integrity):
    # [{"code": ..., "message": ..., "evidence": [...]}]
    flags = models.JSONField(default=list, blank=True)
    # The evaluation the run is ranked by; kept current by services.evaluations only.
    headline_evaluation = models.ForeignKey(
        "submissions.Evaluation",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    metadata = models.JSONField(default=dict, blank=True)
    wall_time_s = models.FloatField(null=True, blank=True)
    turns = models.PositiveIntegerField(null=True, blank=True)
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    cached_input_tokens = models.BigIntegerField(null=True, blank=True)
    reasoning_tokens = models.BigIntegerField(null=True, blank=True)
    cost_usd = models.FloatField(null=True, blank=True)
    # Where each figure above came from: {"input_tokens": "metadata" | "transcript" | "prices"}.
    figure_sources = models.JSONField(default=dict, blank=True)
    cli_version = models.CharField(max_length=100, blank=True)
    prompt_hash = models.CharField(max_length=128, blank=True)
    # The wall budget the run was launched under, in seconds (metadata budget_s; `arena run`
    # writes it), where declared.
    budget_s = models.FloatField(null=True, blank=True)
    # A run imported from another benchmark's publication (manage.py import_runs): where its code
    # is published, and that source's own verdict, as it published it: {"source", "run_id",
    # "gpu", "correct", "failure_reason", "peak_fraction"}. Shown beside ours, never ranked.
    source_url = models.URLField(max_length=500, blank=True)
    source_result = models.JSONField(default=dict, blank=True)

    transcript_status = models.CharField(
        max_length=16, choices=TranscriptStatus.choices, default=TranscriptStatus.PENDING
    )
    transcript_error = models.TextField(blank=True)
    # When the parsing was last sent again by the sweeper, and how many times (at most one
    # message in flight per run; services.transcripts.resend_stalled).
    transcript_resent_at = models.DateTimeField(null=True, blank=True)
    transcript_resends = models.PositiveSmallIntegerField(default=0)
    normalized_transcript = models.FileField(
        upload_to=normalized_transcript_path, max_length=200, blank=True
    )

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["content_key"], name="run_unique_content_key"),
        ]
        indexes = [
            # home page: recent published runs
            models.Index(fields=["published", "-created_at"], name="run_published_recent_idx"),
            # boards: published runs of one problem on one hardware target
            models.Index(fields=["problem", "hardware", "published"], name="run_board_idx"),
        ]

    def __str__(self) -> str:
        return f"run {self.uuid}"

    def get_absolute_url(self) -> str:
        return reverse("submissions:run-detail", kwargs={"run_id": self.uuid})

    @property
    def verified_campaign(self):
        """The verified campaign that launched this run (services.campaigns), or None for an
        uploaded run. Select ``campaign_launch__campaign`` with the run to spare two queries."""
        launch = getattr(self, "campaign_launch", None)
        return launch.campaign if launch else None


class TranscriptFile(models.Model):
    """One transcript file, stored byte for byte; ``name`` is its path inside the run folder."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="transcript_files")
    name = models.CharField(max_length=255)
    file = models.FileField(upload_to=transcript_path, max_length=200)
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["run", "name"], name="transcript_unique_name_per_run"),
        ]

    def __str__(self) -> str:
        return self.name
