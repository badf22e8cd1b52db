"""The human side of integrity: staff verdicts on runs, problem versions taken off the boards."""

from django.conf import settings
from django.db import models

from submissions.models.registry import Problem
from submissions.models.runs import Run


class Annotation(models.Model):
    """A staff verdict on a run with its evidence; never edited, so the run keeps its history."""

    class Verdict(models.TextChoices):
        LEGIT = "legit", "Legit"
        SUSPICIOUS = "suspicious", "Suspicious"
        HACK = "hack", "Hack"
        INVALID_PROBLEM = "invalid_problem", "Invalid problem"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="annotations")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotations"
    )
    verdict = models.CharField(max_length=20, choices=Verdict.choices)
    comment = models.TextField(blank=True)
    # [{"kind": "event", "event": "e-12"} | {"kind": "lines", "start": 10, "end": 24}]
    evidence = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.get_verdict_display()} on {self.run}"


class RetiredProblemVersion(models.Model):
    """A problem version whose specification was wrong: its runs leave the boards, with a note."""

    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="retired_versions")
    version = models.CharField(max_length=64)
    note = models.TextField()
    retired_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    retired_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["problem", "version"], name="retired_problem_version_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.problem} {self.version[:12]} (retired)"


class RunForReview(Run):
    """The review queue in the admin: flagged runs no one has annotated, and runs held for
    review (``selectors.review_queue``)."""

    class Meta:
        proxy = True
        verbose_name = "run to review"
        verbose_name_plural = "review queue"
