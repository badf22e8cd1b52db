"""Real Celery worker processes and a private Redis for the fault-injection tests."""

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import redis
from django.conf import settings
from django.db import connection

from arena_web.celery import app
from tests.workers.conftest import FAKE_ENGINE

LEASE_S = 4
MAX_ATTEMPTS = 2


def wait_for(condition: Callable[[], object], *, timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)
    return value


def database_url() -> str:
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class Workers:
    """Starts ``celery worker`` processes on one queue that see the test database."""

    def __init__(self, tmp_path: Path, engine_log: Path) -> None:
        self.tmp_path = tmp_path
        self.engine_log = engine_log
        self.queue = f"gpu.test-{uuid.uuid4().hex[:8]}"
        self.processes: list[subprocess.Popen] = []

    def start(self, *, broker_url: str | None = None) -> subprocess.Popen:
        log = self.tmp_path / f"worker-{len(self.processes)}.log"
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "arena_web",
            "worker",
            "-Q",
            self.queue,
            "-c",
            "1",
            "--pool",
            "prefork",
            "--without-mingle",
            "--without-gossip",
            "-n",
            f"w{uuid.uuid4().hex[:6]}@%h",
            "--loglevel",
            "INFO",
        ]
        with open(log, "wb") as out:
            process = subprocess.Popen(
                command,
                env=self._env(broker_url) | {"CUDA_VISIBLE_DEVICES": str(len(self.processes))},
                cwd=settings.BASE_DIR,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(process)
        return process

    def _env(self, broker_url: str | None) -> dict[str, str]:
        return os.environ | {
            "DATABASE_URL": database_url(),
            "DB_CONN_MAX_AGE": "0",
            "CELERY_BROKER_URL": broker_url or app.conf.broker_url,
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "ARENA_ENGINE_COMMAND": shlex.join([sys.executable, str(FAKE_ENGINE)]),
            "FAKE_ENGINE_LOG": str(self.engine_log),
            "ARENA_EVAL_LEASE_S": str(LEASE_S),
            "ARENA_EVAL_HEARTBEAT_S": "1",
            "ARENA_EVAL_MAX_ATTEMPTS": str(MAX_ATTEMPTS),
            # each worker stands for a GPU of its own (CUDA_VISIBLE_DEVICES per worker)
            "ARENA_GPU_LOCK_DIR": str(self.tmp_path / "gpu-locks"),
        }

    def kill(self, process: subprocess.Popen) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.tmp_path.glob("*.log")))

    def stop_all(self) -> None:
        for process in self.processes:
            self.kill(process)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A Redis of our own that keeps nothing on disk, so a restart loses every queued message."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self._pings, timeout=10, what="the private Redis to answer")

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None

    def queue_length(self, queue: str) -> int:
        return redis.Redis.from_url(self.url).llen(queue)

    def _pings(self) -> bool:
        try:
            return redis.Redis.from_url(self.url, socket_timeout=0.5).ping()
        except redis.ConnectionError:
            return False


@contextlib.contextmanager
def publishing_to(url: str) -> Iterator[None]:
    """Point this process's Celery producer at another broker for the block."""
    saved = app.conf.broker_url
    _reset_pools(url)
    try:
        yield
    finally:
        _reset_pools(saved)


def _reset_pools(url: str) -> None:
    # kombu keeps one pool per broker URL; dropping our references makes the app pick another.
    app.conf.broker_url = app.conf.broker_write_url = url
    app._pool = None
    app.amqp._producer_pool = None
