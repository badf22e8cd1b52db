"""Celery tasks: thin wrappers that each call one service. Services send them by name
(``submissions.services.queue``) and never import this module."""

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from submissions import worker_checks  # noqa: F401  (connects the worker's startup checks)
from submissions.boards import snapshot
from submissions.models import Evaluation, HardwareTarget, Run
from submissions.services import campaigns, evaluations, queue, transcripts

logger = logging.getLogger(__name__)


@shared_task(name=queue.EVALUATE, acks_late=True, reject_on_worker_lost=True, bind=True)
def evaluate(self, *, evaluation_id: int) -> None:
    if not Evaluation.objects.filter(pk=evaluation_id).exists():
        logger.warning("evaluation %s is gone; message dropped", evaluation_id)
        return
    # the node name (gpu1@host) tells the workers of one host apart; eager calls have none
    worker = self.request.hostname or ""
    evaluations.run_evaluation(evaluation_id=evaluation_id, worker=worker)


@shared_task(name="submissions.sweep_evaluations")
def sweep_evaluations() -> None:
    evaluations.sweep()
    stalled = timezone.now() - timedelta(seconds=settings.ARENA_EVAL_REQUEUE_AFTER_S)
    if resent := transcripts.resend_stalled(before=stalled):
        logger.warning("sweeper: %s transcript parsings sent again", resent)


@shared_task(name=queue.PROCESS_TRANSCRIPT)
def process_transcript(*, run_id: int) -> None:
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        logger.warning("run %s is gone; transcript message dropped", run_id)
        return
    transcripts.process_transcript(run=run)


@shared_task(name=queue.REFRESH_BOARDS)
def refresh_boards(*, hardware_id: int) -> None:
    if not HardwareTarget.objects.filter(pk=hardware_id).exists():
        logger.warning("hardware target %s is gone; board refresh dropped", hardware_id)
        return
    snapshot.refresh_board(hardware_id=hardware_id)


@shared_task(name=queue.LAUNCH_AGENT, acks_late=True, reject_on_worker_lost=True)
def launch_agent(*, launch_id: int) -> None:
    # on an agent worker (queue "agents"): minutes to hours of one CLI's run, then its upload
    campaigns.run_launch(launch_id=launch_id)
