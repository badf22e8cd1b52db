"""Quotas on what one submitter may have waiting for the graders."""

from django.conf import settings

from submissions.models import Evaluation
from submissions.uploads import IntakeError


class QuotaExceeded(IntakeError):
    status_code = 429
    retry_after_s = 60  # about one grade: by then a waiting evaluation has usually finished


def check_queued_evaluations(*, submitter) -> None:
    """Refuse a new run while the submitter's runs hold the most evaluations allowed to wait.

    Running evaluations count too: they still hold a worker. Two uploads racing past the check
    can each add one, so the cap can be passed by the number of concurrent uploads.
    """
    if submitter is None or submitter.is_staff:
        return
    limit = settings.ARENA_MAX_QUEUED_EVALUATIONS
    # staff's lineage gradings of the submitter's runs are not the submitter's to wait for
    waiting = (
        Evaluation.objects.counted()
        .filter(
            run__submitter=submitter,
            status__in=[Evaluation.Status.QUEUED, Evaluation.Status.RUNNING],
        )
        .count()
    )
    if waiting >= limit:
        raise QuotaExceeded(
            f"You have {waiting} evaluations waiting or running; the limit is {limit}. "
            "Nothing was stored: upload again once some of them are graded."
        )
