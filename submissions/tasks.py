"""Celery tasks: thin wrappers that each call one service."""

import logging

from celery import shared_task

from submissions import (
    evaluations,
    transcript_processing,
    worker_checks,  # noqa: F401  (connects the worker's startup checks)
)
from submissions.models import Evaluation, Run

logger = logging.getLogger(__name__)


@shared_task(name="submissions.evaluate", acks_late=True, reject_on_worker_lost=True)
def evaluate(*, evaluation_id: int) -> None:
    if not Evaluation.objects.filter(pk=evaluation_id).exists():
        logger.warning("evaluation %s is gone; message dropped", evaluation_id)
        return
    evaluations.run_evaluation(evaluation_id=evaluation_id)


@shared_task(name="submissions.sweep_evaluations")
def sweep_evaluations() -> None:
    evaluations.sweep()


@shared_task(name="submissions.process_transcript")
def process_transcript(*, run_id: int) -> None:
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        logger.warning("run %s is gone; transcript message dropped", run_id)
        return
    transcript_processing.process_transcript(run=run)
