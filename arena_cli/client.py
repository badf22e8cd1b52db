"""HTTP to the platform with the standard library: JSON reads and a streamed multipart upload
with a progress bar and retries on connection failures.

A retried upload cannot create a duplicate: the platform answers an identical re-upload by the
same submitter with the earlier run (200)."""

from __future__ import annotations

import http.client
import json
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import urljoin, urlsplit

CHUNK = 64 * 1024
RETRIED_STATUSES = (502, 503, 504)
TRANSIENT = (ConnectionError, TimeoutError, http.client.RemoteDisconnected, OSError)
HOW_TO_LOG_IN = (
    "ask the platform's maintainers for a token (they run `manage.py create_api_token "
    "USERNAME`), then `arena login --token TOKEN` or set ARENA_TOKEN"
)


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class AuthError(ApiError):
    """The server refused the token (or none was sent where one is needed)."""


class Unreachable(Exception):
    """No answer from the server after every retry."""


@dataclass
class Part:
    name: str
    value: str | None = None
    path: Path | None = None
    filename: str = ""

    def head(self, boundary: str) -> bytes:
        disposition = f'form-data; name="{self.name}"'
        if self.path is not None:
            disposition += f'; filename="{_quoted(self.filename or self.path.name)}"'
        lines = [f"--{boundary}", f"Content-Disposition: {disposition}"]
        if self.path is not None:
            lines.append("Content-Type: application/octet-stream")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def size(self) -> int:
        return self.path.stat().st_size if self.path is not None else len(self.body())

    def body(self) -> bytes:
        return (self.value or "").encode()


def _quoted(name: str) -> str:
    return name.replace("\\", "_").replace('"', "_").replace("\r", "_").replace("\n", "_")


@dataclass
class Multipart:
    parts: list[Part]
    boundary: str = field(default_factory=lambda: "arena-" + secrets.token_hex(16))

    @property
    def content_type(self) -> str:
        return f"multipart/form-data; boundary={self.boundary}"

    def length(self) -> int:
        framing = sum(len(p.head(self.boundary)) + p.size() + 2 for p in self.parts)
        return framing + len(self._tail())

    def chunks(self) -> Iterator[bytes]:
        for part in self.parts:
            yield part.head(self.boundary)
            if part.path is None:
                yield part.body()
            else:
                with part.path.open("rb") as handle:
                    yield from iter(lambda h=handle: h.read(CHUNK), b"")
            yield b"\r\n"
        yield self._tail()

    def _tail(self) -> bytes:
        return f"--{self.boundary}--\r\n".encode()


class ProgressBar:
    def __init__(self, total: int, *, out: IO[str] | None = None, width: int = 30) -> None:
        self.total, self.done, self.width = max(total, 1), 0, width
        self.out = out or sys.stderr

    def advance(self, count: int) -> None:
        self.done += count
        share = min(self.done / self.total, 1.0)
        bar = "#" * int(share * self.width)
        self.out.write(
            f"\rupload [{bar:<{self.width}}] {share:4.0%} {_size(self.done)}/{_size(self.total)}"
        )
        self.out.flush()

    def finish(self) -> None:
        self.out.write("\n")
        self.out.flush()


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024 or unit == "MiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return str(count)


@dataclass
class Client:
    url: str
    token: str | None = None
    retries: int = 3
    timeout: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    progress_out: IO[str] | None = None

    def get_json(self, path: str):
        return self._with_retries(lambda: self._request("GET", path))

    def upload(self, path: str, form: Multipart) -> tuple[int, dict]:
        return self._with_retries(lambda: self._post_multipart(path, form))

    def absolute(self, path: str) -> str:
        return urljoin(self.url + "/", path.lstrip("/")) if not path.startswith("http") else path

    def _with_retries(self, attempt: Callable[[], tuple[int, dict]]) -> tuple[int, dict]:
        last: Exception | None = None
        for number in range(self.retries + 1):
            if number:
                self.sleep(min(2 ** (number - 1), 30))
                print(f"retrying ({number}/{self.retries}) after: {last}", file=sys.stderr)
            try:
                status, body = attempt()
            except TRANSIENT as error:
                last = error
                continue
            if status not in RETRIED_STATUSES:
                return _checked(status, body)
            last = ApiError(status, f"the server answered {status}")
        raise Unreachable(f"no answer from {self.url} after {self.retries + 1} tries: {last}")

    def _connection(self, url: str) -> tuple[http.client.HTTPConnection, str]:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ApiError(0, f"{self.url}: not an http(s) URL")
        secure = parts.scheme == "https"
        kind = http.client.HTTPSConnection if secure else http.client.HTTPConnection
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        return kind(parts.hostname, parts.port, timeout=self.timeout), target

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "arena-cli"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        return headers

    def _request(self, method: str, path: str) -> tuple[int, dict]:
        connection, target = self._connection(self.absolute(path))
        try:
            connection.request(method, target, headers=self._headers())
            return _read(connection.getresponse())
        finally:
            connection.close()

    def _post_multipart(self, path: str, form: Multipart) -> tuple[int, dict]:
        connection, target = self._connection(self.absolute(path))
        bar = ProgressBar(form.length(), out=self.progress_out)
        try:
            connection.putrequest("POST", target)
            headers = self._headers() | {
                "Content-Type": form.content_type,
                "Content-Length": str(form.length()),
            }
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.endheaders()
            for chunk in form.chunks():
                connection.send(chunk)
                bar.advance(len(chunk))
            bar.finish()
            return _read(connection.getresponse())
        finally:
            connection.close()


def _read(response: http.client.HTTPResponse) -> tuple[int, dict]:
    raw = response.read()
    try:
        body = json.loads(raw) if raw else {}
    except ValueError:
        body = {"detail": raw[:300].decode("utf-8", "replace")}
    return response.status, body if isinstance(body, dict | list) else {"detail": body}


def _checked(status: int, body) -> tuple[int, dict]:
    if status in (401, 403):
        detail = body.get("detail", "") if isinstance(body, dict) else ""
        message = f"the server refused the request ({status}: {detail}); {HOW_TO_LOG_IN}"
        raise AuthError(status, message)
    if status >= 400:
        raise ApiError(status, describe_refusal(status, body))
    return status, body


def describe_refusal(status: int, body) -> str:
    """Every field's message, one per line: the server names valid slugs for an unknown one."""
    if not isinstance(body, dict):
        return f"the server refused the request ({status})"
    lines = []
    for key, value in body.items():
        messages = value if isinstance(value, list) else [value]
        label = "" if key in ("detail", "non_field_errors") else f"{key}: "
        lines += [f"{label}{message}" for message in messages]
    return f"the server refused the request ({status}):\n  " + "\n  ".join(lines)
