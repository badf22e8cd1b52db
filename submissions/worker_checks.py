"""A worker refuses to start with a configuration that would lose or duplicate evaluations, or
that would share a GPU with another worker (two evaluations on one GPU corrupt each other's
timings).

Celery swallows exceptions raised by signal handlers, so the handler exits the process itself.
"""

import fcntl
import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

from celery.signals import worker_init
from django.conf import settings

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


def gpu_problems(*, queues: list[str], visible: str | None, host_gpus: list[str]) -> list[str]:
    """Why a GPU worker is not pinned to exactly one GPU of its host; empty when it is.

    ``visible`` is CUDA_VISIBLE_DEVICES (None when unset), ``host_gpus`` the host's GPU UUIDs.
    """
    if not any(q.startswith(GPU_QUEUE_PREFIX) for q in queues):
        return []
    if visible is None:
        if len(host_gpus) > 1:
            return [
                f"CUDA_VISIBLE_DEVICES is unset on a host with {len(host_gpus)} GPUs: "
                "pin each GPU worker to one GPU"
            ]
        return []
    devices = [d for d in visible.split(",") if d.strip()]
    if len(devices) != 1:
        return [f"CUDA_VISIBLE_DEVICES={visible!r} names {len(devices)} GPUs, not one"]
    return []


_SMI_LINE = re.compile(r"^GPU (?P<index>\d+): .*\(UUID: (?P<uuid>[^)]+)\)")


def host_gpus() -> list[str]:
    """The host's GPU UUIDs in index order (``nvidia-smi -L``); empty without NVIDIA tools."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        done = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_gpu_list(done.stdout)


def parse_gpu_list(text: str) -> list[str]:
    found = [_SMI_LINE.match(line.strip()) for line in text.splitlines()]
    return [m["uuid"] for m in sorted(filter(None, found), key=lambda m: int(m["index"]))]


def pinned_gpu(*, visible: str | None, gpus: list[str]) -> str:
    """The identity of the GPU a worker uses: its UUID when the host lists it."""
    device = (visible or "0").split(",")[0].strip()
    if device.isdigit() and int(device) < len(gpus):
        return gpus[int(device)]
    return device


def hold_gpu(gpu: str, *, lock_dir: Path):
    """Lock `gpu` for this process's lifetime (the returned file must stay open); raise
    UnsafeWorkerConfig when another worker on this host holds it."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    path = lock_dir / f"gpu-{re.sub(r'[^A-Za-z0-9_.-]', '_', gpu)}.lock"
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "?"
        handle.close()
        raise UnsafeWorkerConfig(
            f"GPU {gpu} is already held by another worker on this host (pid {holder})"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


_held = []  # the lock of this worker's GPU, open for the process's lifetime


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
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus = host_gpus()
    problems += gpu_problems(queues=queues, visible=visible, host_gpus=gpus)
    if problems:
        raise UnsafeWorkerConfig("; ".join(problems))
    if any(q.startswith(GPU_QUEUE_PREFIX) for q in queues):
        gpu = pinned_gpu(visible=visible, gpus=gpus)
        _held.append(hold_gpu(gpu, lock_dir=Path(settings.ARENA_GPU_LOCK_DIR)))
        logger.info("worker holds GPU %s", gpu)


@worker_init.connect(dispatch_uid="submissions.worker_checks")
def refuse_unsafe_worker(sender, **kwargs) -> None:
    try:
        check_worker(sender)
    except UnsafeWorkerConfig as exc:
        logger.critical("worker refuses to start: %s", exc)
        raise SystemExit(f"worker refuses to start: {exc}") from exc
