"""Gradings of runs, their per-shape results, and cached reference timings."""

from django.conf import settings
from django.db import models

from runners import contract
from submissions.models.registry import HardwareTarget
from submissions.models.runs import Run, Solution


class EvaluationQuerySet(models.QuerySet):
    def counted(self):
        """Gradings of the run itself: lineage gradings never make a headline, status or board."""
        return self.exclude(trigger=Evaluation.Trigger.LINEAGE)


class Evaluation(models.Model):
    """One grading of a run on one hardware target; ``result`` is an ``EvaluationResult`` dict."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        ERROR = "error", "Error"

    # runners.schema.Verdict (through runners.contract), the failure taxonomy of
    # docs/architecture.md, written there once
    Verdict = models.TextChoices(
        "Verdict",
        [
            (value.upper(), (value, contract.Verdict.LABELS[value]))
            for value in contract.Verdict.ALL
        ],
    )

    class Quadrant(models.TextChoices):
        # runners.contract.QUADRANTS: the run's held-out correctness against its starter's
        BOTH_PASS = "both_pass", "Both pass"
        REGRESSION = "regression", "Regression vs starter"
        IMPROVEMENT = "improvement", "Improvement over starter"
        BOTH_FAIL = "both_fail", "Both fail"

    class Trigger(models.TextChoices):
        UPLOAD = "upload", "Upload"
        REEVALUATE = "reevaluate", "Re-evaluation"
        SWEEPER = "sweeper", "Sweeper"
        LINEAGE = "lineage", "Lineage version"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="evaluations")
    hardware = models.ForeignKey(
        HardwareTarget, on_delete=models.PROTECT, related_name="evaluations"
    )
    # A lineage grading grades one rebuilt version's content instead of the run's upload; the
    # run's LineageVersion rows with this solution are the versions it grades.
    solution = models.ForeignKey(
        Solution, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    verdict = models.CharField(max_length=32, choices=Verdict.choices, blank=True)
    reason = models.TextField(blank=True)
    # The run's aggregates over its shapes (runners.contract.run_aggregates): the score and
    # held-out score it ranks by, and its geometric-mean speedups over the visible shapes.
    # `manage.py rescore` recomputes them from the shape rows after a change of the rule.
    score = models.FloatField(null=True, blank=True)
    hidden_score = models.FloatField(null=True, blank=True)
    speedup_eager = models.FloatField(null=True, blank=True)
    speedup_compile = models.FloatField(null=True, blank=True)
    correct_visible = models.BooleanField(null=True, blank=True)
    correct_hidden = models.BooleanField(null=True, blank=True)
    # Kernel-to-kernel problems: the result's StarterComparison (blank and null otherwise).
    starter_quadrant = models.CharField(max_length=16, choices=Quadrant.choices, blank=True)
    starter_hidden_correct = models.BooleanField(null=True, blank=True)
    conditional_hidden_correct = models.FloatField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)
    environment = models.JSONField(default=dict, blank=True)
    engine_version = models.CharField(max_length=64, blank=True)
    trigger = models.CharField(max_length=16, choices=Trigger.choices, default=Trigger.UPLOAD)
    triggered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker_host = models.CharField(max_length=255, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    # False when the result says the grade was not made as the protocol requires (not
    # sandboxed, another GPU model): never published or ranked (services.integrity).
    trusted = models.BooleanField(default=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    objects = EvaluationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(status="done", verdict=""),
                name="evaluation_done_has_verdict",
            ),
        ]
        indexes = [
            # sweeper: running evaluations whose lease expired, queued ones left behind
            models.Index(fields=["status", "lease_expires_at"], name="evaluation_sweeper_idx"),
            # run page and boards: latest done evaluation per run and hardware
            models.Index(
                fields=["run", "hardware", "status", "-finished_at"],
                name="evaluation_latest_done_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"evaluation {self.pk} of run {self.run_id}"


# What a shape's row holds besides its identity (set, index, params): the one list that the
# engine's result is mapped through and that the admin, API and pages show. `case` (a held-out
# shape's kind: edge, scale-up...) and `scored` describe a shape without giving its sizes away,
# so they stay public where params are redacted.
SHAPE_MEASURES = (
    "case",
    "scored",
    "correct",
    "starter_correct",
    "median_us",
    "tflops",
    "gbps",
    "peak_fraction",
    "speedup_eager",
    "speedup_compile",
    "speedup_library",
    "speedup_starter",
    "max_abs_err",
    "max_rel_err",
    "error",
)


class ShapeResult(models.Model):
    """One shape of an evaluation, queryable; the full form is in ``Evaluation.result``."""

    class Set(models.TextChoices):
        VISIBLE = "visible", "Visible"
        HIDDEN = "hidden", "Held-out"
        SMOKE = "smoke", "Smoke"

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="shapes")
    set = models.CharField(max_length=8, choices=Set.choices)
    index = models.PositiveIntegerField()
    params = models.JSONField(default=dict, blank=True)
    case = models.CharField(max_length=64, blank=True)
    # False: a held-out shape too small to time meaningfully, graded for correctness only.
    scored = models.BooleanField(null=True, blank=True)
    correct = models.BooleanField(null=True, blank=True)
    starter_correct = models.BooleanField(null=True, blank=True)
    median_us = models.FloatField(null=True, blank=True)
    tflops = models.FloatField(null=True, blank=True)
    gbps = models.FloatField(null=True, blank=True)
    peak_fraction = models.FloatField(null=True, blank=True)
    speedup_eager = models.FloatField(null=True, blank=True)
    speedup_compile = models.FloatField(null=True, blank=True)
    speedup_library = models.FloatField(null=True, blank=True)
    speedup_starter = models.FloatField(null=True, blank=True)
    max_abs_err = models.FloatField(null=True, blank=True)
    max_rel_err = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["evaluation", "set", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluation", "set", "index"], name="shape_result_unique_per_evaluation"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.set} #{self.index}"

    @classmethod
    def from_schema(cls, shape: contract.ShapeResult, *, evaluation_id: int) -> "ShapeResult":
        measures = {name: getattr(shape, name, None) for name in SHAPE_MEASURES}
        measures["median_us"] = shape.time.median_us if shape.time else None
        measures["error"] = shape.error or ""
        measures["case"] = (shape.case or "")[:64]  # a label such as "edge", never refused
        return cls(
            evaluation_id=evaluation_id,
            set=shape.set,
            index=shape.index,
            params=shape.params,
            **measures,
        )


class BaselineTiming(models.Model):
    """Reference timings (``runners.contract.BASELINE_KINDS``: eager, torch.compile, the library's
    implementation, a kernel-to-kernel problem's starter) cached per shape, GPU model, torch and
    the engine's timing protocol (``runners.timing.PROTOCOL``), with whether the starter is
    correct on the shape."""

    problem_version = models.CharField(max_length=64)
    shape_key = models.CharField(max_length=500)
    gpu_model = models.CharField(max_length=100)
    torch_version = models.CharField(max_length=64)
    timing_protocol = models.PositiveSmallIntegerField(default=1, db_default=1)
    eager = models.JSONField(null=True, blank=True)
    compile = models.JSONField(null=True, blank=True)
    library = models.JSONField(null=True, blank=True)
    starter = models.JSONField(null=True, blank=True)
    starter_correct = models.BooleanField(null=True, blank=True)
    # Kinds whose timing ran past the engine's limit (runners.performance.BASELINE_TIMEOUT_S):
    # later grades do not time them again. Delete the row to have them timed once more.
    timed_out = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "problem_version",
                    "shape_key",
                    "gpu_model",
                    "torch_version",
                    "timing_protocol",
                ],
                name="baseline_timing_unique_key_protocol",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.problem_version[:12]} {self.shape_key} {self.gpu_model}"
