"""A worker refuses to start with a configuration that would lose or duplicate evaluations.

Celery swallows exceptions raised by signal handlers, so the handler exits the process itself.
"""

import logging

from celery.signals import worker_init

logger = logging.getLogger(__name__)

GPU_QUEUE_PREFIX = "gpu."


class UnsafeWorkerConfig(Exception):
    """The worker's settings break the delivery guarantees evaluations rely on."""


def delivery_problems(conf, *, broker_url: str, queues: list[str], concurrency: int) -> list[str]:
    """Why this worker configuration is unsafe, one sentence per problem; empty when it is safe."""
    problems = []
    if not conf.task_acks_late:
        problems.append("task_acks_late is off: a worker lost mid-run would lose its evaluation")
    if not conf.task_reject_on_worker_lost:
        problems.append("task_reject_on_worker_lost is off: a killed pool child acks its message")
    if conf.worker_prefetch_multiplier != 1:
        problems.append(
            f"worker_prefetch_multiplier is {conf.worker_prefetch_multiplier}, not 1: "
            "a busy worker would hoard queued evaluations"
        )
    problems += _visibility_problems(conf, broker_url=broker_url)
    gpu_queues = [q for q in queues if q.startswith(GPU_QUEUE_PREFIX)]
    if gpu_queues and concurrency != 1:
        problems.append(
            f"concurrency is {concurrency} on {', '.join(gpu_queues)}: "
            "one evaluation per GPU at a time keeps timings honest"
        )
    return problems


def _visibility_problems(conf, *, broker_url: str) -> list[str]:
    if not broker_url.startswith(("redis://", "rediss://")):
        return []
    hard_limit = conf.task_time_limit
    if not hard_limit:
        return ["task_time_limit is unset: a hung evaluation would hold its GPU forever"]
    visibility = (conf.broker_transport_options or {}).get("visibility_timeout", 3600)
    if visibility <= hard_limit:
        return [
            f"broker visibility_timeout {visibility}s is not above the hard time limit "
            f"{hard_limit}s: Redis would redeliver running evaluations"
        ]
    return []


def check_worker(worker) -> None:
    """Raise UnsafeWorkerConfig for a worker that consumes evaluations unsafely."""
    conf = worker.app.conf
    queues = sorted(worker.app.amqp.queues.consume_from or worker.app.amqp.queues)
    concurrency = worker.concurrency if isinstance(worker.concurrency, int) else 0
    problems = delivery_problems(
        conf,
        broker_url=worker.app.connection_for_read().as_uri(),
        queues=queues,
        concurrency=concurrency,
    )
    if problems:
        raise UnsafeWorkerConfig("; ".join(problems))


@worker_init.connect(dispatch_uid="submissions.worker_checks")
def refuse_unsafe_worker(sender, **kwargs) -> None:
    try:
        check_worker(sender)
    except UnsafeWorkerConfig as exc:
        logger.critical("worker refuses to start: %s", exc)
        raise SystemExit(f"worker refuses to start: {exc}") from exc
