"""The request/reply loop run inside the engine's child processes (candidate and reference).

Requests arrive as JSON lines on stdin; replies leave as JSON lines on a separate pipe, so what
the candidate prints (stdout and stderr go to a log) never reaches the parent as a reply. Each
reply carries the nonce of its request, which the parent checks: a line the solution wrote to
the pipe itself (its descriptor can be found; file writes are allowed) cannot pass for one.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

Handler = Callable[[dict[str, Any]], dict[str, Any]]

_RESOURCE_ERRNOS = {errno.EAGAIN, errno.EFBIG, errno.ENOSPC, errno.EMFILE, errno.ENOMEM}
_RESOURCE_TEXT = ("out of memory", "resource temporarily unavailable", "can't start new thread")


def classify(exc: BaseException) -> str:
    """'resource' for exhausted limits (memory, processes, file size), 'exit' or 'error'."""
    if isinstance(exc, MemoryError):
        return "resource"
    if isinstance(exc, OSError) and exc.errno in _RESOURCE_ERRNOS:
        return "resource"
    if isinstance(exc, SystemExit | KeyboardInterrupt):
        return "exit"
    text = str(exc).lower()
    return "resource" if any(t in text for t in _RESOURCE_TEXT) else "error"


def describe(exc: BaseException, limit: int = 1500) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def serve(handlers: dict[str, Handler], reply_fd: int) -> None:
    reply = os.fdopen(reply_fd, "w", buffering=1)
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        request = json.loads(line)
        nonce = request.pop("nonce", None)  # not handed on: no handler, no solution, sees it
        try:
            answer = {"ok": True, **handlers[request["op"]](request)}
        except BaseException as exc:  # the candidate's exit() and errors are results too
            answer = {"ok": False, "kind": classify(exc), "error": describe(exc)}
        reply.write(json.dumps({**answer, "nonce": nonce}) + "\n")
        reply.flush()


def reply_fd_from_argv(argv: list[str]) -> int:
    """Take `--reply-fd N` out of argv so the solution does not find it there."""
    index = argv.index("--reply-fd")
    fd = int(argv[index + 1])
    del argv[index : index + 2]
    return fd
