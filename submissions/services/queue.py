"""Sending Celery tasks by name, and asking which queues have a worker listening.

Services never import ``submissions.tasks`` (the tasks import the services); they send by name.
``SubmissionsConfig.ready`` imports the tasks, so the names resolve in every process and eager
mode runs them in-process as a worker would.
"""

import logging

from celery import current_app
from django.conf import settings
from django.db import transaction
from kombu.exceptions import KombuError

logger = logging.getLogger(__name__)

EVALUATE = "submissions.evaluate"
PROCESS_TRANSCRIPT = "submissions.process_transcript"
REFRESH_BOARDS = "submissions.refresh_boards"
LAUNCH_AGENT = "submissions.launch_agent"

INSPECT_TIMEOUT_S = 1.0
# kombu's Redis transport serves priority 0 first and 9 last; a message without one is sent as 0.
LOW_PRIORITY = 9


def enqueue(
    name: str,
    *,
    queue: str | None = None,
    priority: int | None = None,
    time_limit_s: float | None = None,
    **kwargs,
) -> None:
    """``time_limit_s``: this message's soft time limit (the hard one a minute later), for a
    task whose length the sender knows (an agent launch's budget) instead of the default."""
    limits = {}
    if time_limit_s is not None:
        limits = {"soft_time_limit": time_limit_s, "time_limit": time_limit_s + 60}
    current_app.tasks[name].apply_async(kwargs=kwargs, queue=queue, priority=priority, **limits)


def enqueue_on_commit(name: str, *, queue: str | None = None, robust: bool = False, **kwargs):
    """Send once the surrounding transaction commits (at once outside a transaction)."""
    transaction.on_commit(lambda: enqueue(name, queue=queue, **kwargs), robust=robust)


def refresh_boards_on_commit(*, hardware_ids) -> None:
    """Recompute the boards of these targets after the commit; a failure never fails a write."""
    for hardware_id in sorted(set(hardware_ids)):
        enqueue_on_commit(REFRESH_BOARDS, hardware_id=hardware_id, robust=True)


def listening_queues() -> set[str]:
    """Queues some worker consumes now. Eager mode grades in-process: ``ARENA_EAGER_QUEUES``."""
    if current_app.conf.task_always_eager:
        return set(settings.ARENA_EAGER_QUEUES)
    try:
        replies = current_app.control.inspect(timeout=INSPECT_TIMEOUT_S).active_queues() or {}
    except (OSError, KombuError) as error:
        logger.warning("could not ask the workers for their queues: %s", error)
        return set()
    return {queue["name"] for queues in replies.values() for queue in queues or ()}


def unserved(hardware_targets) -> list:
    """The targets whose queue no worker listens on (one broadcast for all of them)."""
    listening = listening_queues()
    return [target for target in hardware_targets if target.queue_name not in listening]
