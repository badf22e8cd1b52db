"""The versions of a run's solution.py rebuilt from its transcript (``transcripts.lineage``)."""

from django.db import models

from submissions.models.runs import Run, Solution


class RunLineage(models.Model):
    """How the last rebuilt version compares with the uploaded solution."""

    class Check(models.TextChoices):
        MATCH = "match", "Matches the uploaded solution"
        DIFFERS = "differs", "Differs from the uploaded solution"
        UNKNOWN = "unknown", "Last change not rebuildable"
        NONE = "none", "Never written in the transcript"

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="lineage")
    target = models.CharField(max_length=255, default="solution.py")
    final_check = models.CharField(max_length=16, choices=Check.choices)
    message = models.TextField(blank=True)
    version_count = models.PositiveIntegerField(default=0)
    rebuilt_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"lineage of run {self.run_id}: {self.final_check}"

    @property
    def mismatch(self) -> bool:
        return self.final_check != self.Check.MATCH


class LineageVersion(models.Model):
    """One version, in order. Its content is a ``Solution`` (stored once per sha256, shared with
    uploads and other runs); None when the transcript does not pin the content down."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="lineage_versions")
    index = models.PositiveIntegerField()
    solution = models.ForeignKey(
        Solution, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    path = models.CharField(max_length=500)
    how = models.CharField(max_length=16)  # write | edit | patch | shell | diff | opaque
    tool = models.CharField(max_length=100, blank=True)
    event_id = models.CharField(max_length=64, blank=True)  # the transcript page's anchor
    turn = models.PositiveIntegerField()
    output_tokens = models.PositiveBigIntegerField()
    wall_s = models.FloatField(null=True, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="lineage_version_unique_index"),
        ]

    def __str__(self) -> str:
        return f"version {self.index} of run {self.run_id}"
