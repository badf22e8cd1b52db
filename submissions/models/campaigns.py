"""Verified campaigns: runs the platform itself launches (``arena run`` on Celery agent workers)
with the published prompt and a declared budget, over a matrix maintainers define in the admin."""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from submissions.models.registry import HardwareTarget, Harness, LanguageModel, Problem


class Campaign(models.Model):
    """Every harness, model, effort and problem crossed, times `repeats`: each cell launched once
    on an agent worker under ``budget_s`` of wall time and graded on ``hardware``."""

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    hardware = models.ForeignKey(HardwareTarget, on_delete=models.PROTECT, related_name="+")
    budget_s = models.FloatField(
        validators=[MinValueValidator(1.0)], help_text="Wall budget of each launch, in seconds."
    )
    harnesses = models.ManyToManyField(Harness, related_name="+")
    language_models = models.ManyToManyField(LanguageModel, related_name="+")
    efforts = models.CharField(
        max_length=200,
        blank=True,
        help_text="Comma-separated (high, medium); empty: each CLI's default effort only.",
    )
    problems = models.ManyToManyField(Problem, related_name="+")
    repeats = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def effort_list(self) -> list[str]:
        return [effort.strip() for effort in self.efforts.split(",") if effort.strip()] or [""]


class CampaignLaunch(models.Model):
    """One cell of a campaign's matrix: its launch on an agent worker and the run it made.

    A launch the agent finished, ran out of budget on, or left without a solution becomes a run
    (graded, and counted on the board like any other: a verified campaign keeps its failures).
    A launch the infrastructure failed (provider errors, a CLI that would not start) makes no run
    and may be launched again."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUBMITTED = "submitted", "Submitted"
        FAILED = "failed", "Failed (infrastructure)"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="launches")
    harness = models.ForeignKey(Harness, on_delete=models.PROTECT, related_name="+")
    language_model = models.ForeignKey(LanguageModel, on_delete=models.PROTECT, related_name="+")
    effort = models.CharField(max_length=50, blank=True)
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="+")
    repeat = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # arena_cli.launch.OUTCOMES: why the launch ended
    outcome = models.CharField(max_length=32, blank=True)
    detail = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    run = models.OneToOneField(
        "submissions.Run",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="campaign_launch",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["campaign", "problem", "harness", "language_model", "effort", "repeat"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "harness", "language_model", "effort", "problem", "repeat"],
                name="campaign_launch_unique_cell",
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.campaign.slug}: {self.harness.slug} {self.language_model.slug} "
            f"{self.effort or '-'} {self.problem.slug} #{self.repeat}"
        )
