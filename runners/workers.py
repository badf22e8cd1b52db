"""Parent-side handles on the engine's child processes: send a request, wait for its reply."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from runners import progress

_MAX_REPLY_BYTES = 64 * 2**20


class WorkerError(Exception):
    """The child did not answer as the protocol says."""


class WorkerTimeout(WorkerError):
    pass


class WorkerDied(WorkerError):
    def __init__(self, returncode: int | None, log_tail: str):
        super().__init__(f"the process ended (exit status {returncode})")
        self.returncode = returncode
        self.log_tail = log_tail

    @property
    def signal_name(self) -> str | None:
        number = exit_signal(self.returncode)
        return signal.Signals(number).name if number else None


def _phases(phases: Any) -> str:
    """A child's own account of where a request's time went (the candidate's is its word
    only: shown in the progress log, never used for a verdict)."""
    if not isinstance(phases, dict) or not phases:
        return ""
    parts = (
        f"{str(name)[:20]} {value:.1f} s"
        for name, value in phases.items()
        if isinstance(value, int | float)
    )
    return " (" + ", ".join(parts) + ")"


def exit_signal(returncode: int | None) -> int | None:
    """The signal that ended a child; the sandbox's init reports it as 128 + N."""
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    if 128 < returncode < 128 + 65:
        return returncode - 128
    return None


class Worker:
    """One long-lived child: requests on its stdin, replies on a private pipe."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path,
        log_path: Path,
        preexec_fn=None,
    ):
        read_fd, write_fd = os.pipe()
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [*argv, "--reply-fd", str(write_fd)],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_fd,),
                env=env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=preexec_fn,
            )
        os.close(write_fd)
        self.reply_fd = read_fd
        self.buffer = b""
        self._waiting: str | None = None  # the nonce of a request whose reply is not taken yet

    def request(self, message: dict[str, Any], *, timeout_s: float) -> dict[str, Any]:
        return self.receive(self.send(message), timeout_s=timeout_s)

    def send(self, message: dict[str, Any]) -> tuple[str, str, float]:
        """Send a request without waiting; `receive` takes the ticket this returns. The child
        answers its requests in order: each must be received before the next is sent, or the
        next reply would read as forged and kill the child (so sending early is the engine's
        error, raised here)."""
        if self._waiting is not None:
            raise RuntimeError("a request was sent before the last one's reply was taken")
        nonce = secrets.token_hex(16)
        try:
            self.proc.stdin.write(json.dumps({**message, "nonce": nonce}).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._raise_died()
        self._waiting = nonce
        return nonce, str(message.get("op")), time.monotonic()

    def receive(self, ticket: tuple[str, str, float], *, timeout_s: float) -> dict[str, Any]:
        """The reply to a request `send` sent, within `timeout_s` from now."""
        nonce, op, sent = ticket
        try:
            reply = self._read_reply(time.monotonic() + timeout_s)
        finally:
            self._waiting = None
        if reply.pop("nonce", None) != nonce:
            self.kill()
            raise WorkerError(
                "a reply not written by the engine (its nonce is not the request's): something "
                "in the process wrote to the reply channel"
            )
        progress.debug(
            "  %s %s: %.1f s%s",
            self.log_path.stem,
            op,
            time.monotonic() - sent,
            _phases(reply.get("phases")),
        )
        return reply

    def _read_reply(self, deadline: float) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerTimeout("no reply before the wall-clock limit")
            ready, _, _ = select.select([self.reply_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self.reply_fd, 1 << 20)
            if not chunk:
                self._raise_died()
            self.buffer += chunk
            if len(self.buffer) > _MAX_REPLY_BYTES:
                self.kill()
                raise WorkerError("reply larger than the protocol allows")
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise WorkerError("reply is not a JSON object")
        return reply

    def _raise_died(self):
        try:
            returncode = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            returncode = self.proc.returncode
        self.kill()
        raise WorkerDied(returncode, self.log_tail())

    def log_tail(self, limit: int = 2000) -> str:
        try:  # only the tail: a candidate's log may be as large as its file size limit
            with self.log_path.open("rb") as log:
                log.seek(max(log.seek(0, os.SEEK_END) - limit, 0))
                data = log.read()
        except OSError:
            return ""
        return data.decode("utf-8", "replace")

    def kill(self) -> None:
        """SIGKILL the child's process group; in a pid namespace its init takes the rest along."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.kill()
        with contextlib.suppress(OSError):
            os.close(self.reply_fd)
