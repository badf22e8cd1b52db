"""Board snapshots: the ranked tables computed once per change, not per request."""

from django.db import models

from submissions.models.registry import HardwareTarget


class BoardSnapshot(models.Model):
    """The computed board of one hardware target (rows, intervals, matrix); see
    ``submissions.boards``. Recomputed when an evaluation completes or a run is published,
    withdrawn or re-graded."""

    hardware = models.OneToOneField(
        HardwareTarget, on_delete=models.CASCADE, related_name="board_snapshot"
    )
    data = models.JSONField(default=dict)
    format_version = models.PositiveSmallIntegerField(default=1)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"board of {self.hardware} at {self.computed_at:%Y-%m-%d %H:%M}"
