"""The production stack for real: docker-compose.yml's web, CPU worker and beat commands,
started as they are written there (only the bind address changes) against the machine's
PostgreSQL and Redis, behind nginx with the repository's nginx.conf (the compose file's proxy;
only its ports and scratch paths change), with DEBUG off and the static files collected as the
Dockerfile does; one run uploaded over HTTP is graded by the worker and shown by gunicorn, and
slow clients hold nginx's connections, never gunicorn's workers.

CI runs it as a step of its own (ARENA_STACK_TEST=1); it needs DATABASE_URL (PostgreSQL) and
CELERY_BROKER_URL (Redis), and uses a database and a Redis database number of its own.
"""

import contextlib
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import dj_database_url
import psycopg
import pytest
import requests
import yaml
from django.conf import settings
from urllib3 import encode_multipart_formdata

from tests.workers.real_workers import free_port, wait_for

ROOT = Path(settings.BASE_DIR)
EXAMPLE = ROOT / "examples" / "softmax-run"
STACK_REDIS_DB = os.environ.get("ARENA_STACK_REDIS_DB", "9")
GRADE_TIMEOUT_S = 420

pytestmark = pytest.mark.skipif(
    os.environ.get("ARENA_STACK_TEST") != "1", reason="CI's production stack step sets it"
)


def compose_commands() -> dict:
    """The web, worker and beat commands of docker-compose.yml, gunicorn on a free port
    (`web_port`)."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    port = free_port()
    commands: dict = {"web_port": port}
    for name in ("web", "worker", "beat"):
        command = " ".join(services[name]["command"].split())
        commands[name] = shlex.split(command.replace("0.0.0.0:8000", f"127.0.0.1:{port}"))
    return commands


@pytest.fixture
def database():
    server = dj_database_url.parse(os.environ["DATABASE_URL"])
    name = f"arena_stack_{uuid.uuid4().hex[:8]}"
    admin = {
        k: server[k.upper()] for k in ("host", "port", "user", "password") if server[k.upper()]
    }
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + f"/{name}"
    yield url
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def stack_env(database, tmp_path):
    broker = re.sub(r"/\d*$", "", os.environ["CELERY_BROKER_URL"]) + f"/{STACK_REDIS_DB}"
    venv = str(Path(sys.executable).parent)
    env = os.environ | {
        "PATH": venv + os.pathsep + os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": database,
        "CELERY_BROKER_URL": broker,
        "ARENA_CACHE_URL": broker,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "TRUST_X_FORWARDED_PROTO": "1",
        "MEDIA_ROOT": str(tmp_path / "media"),
        "STATIC_ROOT": str(tmp_path / "static"),
        "ARENA_VAR_DIR": str(tmp_path / "var"),
        "ARENA_SWEEP_EVERY_S": "10",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return env


class Stack:
    def __init__(self, env: dict, logs: Path) -> None:
        self.env, self.logs, self.processes = env, logs, []

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def start(self, name: str, command: list[str], cwd: Path) -> None:
        with open(self.logs / f"{name}.log", "wb") as out:
            process = subprocess.Popen(
                command,
                cwd=cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(process)

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)

    def output(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-4000:]}" for p in self.logs.glob("*.log"))


@pytest.fixture
def stack(stack_env, tmp_path):
    running = Stack(stack_env, tmp_path)
    yield running
    running.stop()


def start_web(stack: Stack, commands: dict) -> str:
    """gunicorn as compose starts it, behind nginx with nginx.conf; returns nginx's address."""
    stack.manage("collectstatic", "--noinput")  # the Dockerfile's build step
    stack.start("web", commands["web"], ROOT)
    port = free_port()
    stack.start("proxy", nginx_command(port, upstream=commands["web_port"]), ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(base), timeout=240, what="gunicorn to answer through nginx")
    except AssertionError:
        print(stack.output())
        raise
    return base


def nginx_command(port: int, *, upstream: int) -> list[str]:
    """nginx.conf as written but for where it listens, its upstream and its scratch folder (a
    world-readable one: nginx's workers drop root)."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).is_file():
        pytest.fail("the production stack needs nginx: apt-get install nginx-light")
    scratch = Path(tempfile.mkdtemp(prefix="arena-nginx-"))
    scratch.chmod(0o755)
    text = (ROOT / "nginx.conf").read_text()
    for old, new in [
        ("listen 8080;", f"listen 127.0.0.1:{port};"),
        ("server web:8000;", f"server 127.0.0.1:{upstream};"),
        ("/tmp/nginx/", f"{scratch}/"),
    ]:
        assert old in text, f"nginx.conf no longer holds {old!r}"
        text = text.replace(old, new)
    conf = scratch / "nginx.conf"
    conf.write_text(text)
    return [nginx, "-p", str(scratch), "-c", str(conf), "-g", "daemon off;"]


def example_fields() -> dict:
    """The example run's form fields (its files aside)."""
    return {
        "problem": "softmax",
        "model": "claude-opus-4-5",
        "harness": "claude-code",
        "hardware": "cpu",
        "effort": "high",
        "metadata": (EXAMPLE / "metadata.json").read_text(),
    }


def upload_example(base: str, token: str) -> dict:
    files = [
        ("solution", ("solution.py", (EXAMPLE / "solution.py").read_bytes())),
        ("transcript", ("transcript.jsonl", (EXAMPLE / "transcript.jsonl").read_bytes())),
    ]
    response = requests.post(
        f"{base}/api/v1/runs/",
        data=example_fields(),
        files=files,
        headers=headers(token),
        timeout=60,
    )
    assert response.status_code == 201, response.text
    return response.json()


def headers(token: str | None = None) -> dict:
    proxy = {"X-Forwarded-Proto": "https"}  # what the TLS proxy in front of web sets
    return proxy | ({"Authorization": f"Token {token}"} if token else {})


def graded(base: str, run_id: str, token: str) -> dict:
    def finished():
        body = requests.get(f"{base}/api/v1/runs/{run_id}/", headers=headers(token), timeout=10)
        return body.json() if body.json()["status"] in ("evaluated", "failed") else None

    return wait_for(finished, timeout=GRADE_TIMEOUT_S, what=f"run {run_id} to be graded")


def test_an_upload_is_graded_through_gunicorn_a_celery_worker_and_beat(stack, tmp_path):
    commands = compose_commands()
    stack.start("worker", commands["worker"], tmp_path)
    stack.start("beat", commands["beat"], tmp_path)
    base = start_web(stack, commands)
    try:
        stack.manage("seed_registry")
        token = stack.manage("create_api_token", "stack-user").strip().splitlines()[-1]
        created = upload_example(base, token)
        run = graded(base, created["id"], token)
    except AssertionError:
        print(stack.output())
        raise
    assert run["status"] == "evaluated", run
    home = requests.get(f"{base}/", headers=headers(), timeout=10)
    assert home.status_code == 200
    assert home.headers["Content-Security-Policy"] == settings.ARENA_CSP
    assert "Strict-Transport-Security" in home.headers
    stylesheet = re.search(r'href="(/static/arena\.[0-9a-f]+\.css)"', home.text).group(1)
    static = requests.get(base + stylesheet, headers=headers(), timeout=10)
    assert static.status_code == 200
    assert "max-age=315360000" in static.headers["Cache-Control"]  # whitenoise, hashed name
    page = requests.get(f"{base}/runs/{created['id']}/", headers=headers(), timeout=10)
    assert page.status_code == 200
    # nginx's own answers carry the security headers Django's do (a header too large: 400)
    refused = requests.get(f"{base}/", headers=headers() | {"X-Big": "x" * 40_000}, timeout=10)
    assert refused.status_code == 400
    assert (
        refused.headers["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"
    )
    assert refused.headers["X-Content-Type-Options"] == "nosniff"
    assert refused.headers["X-Frame-Options"] == "DENY"
    assert "Server" not in refused.headers or "nginx/" not in refused.headers["Server"]


def _answers(base: str) -> bool:
    with contextlib.suppress(requests.ConnectionError):
        return requests.get(f"{base}/api/v1/", headers=headers(), timeout=5).status_code == 200
    return False


SLOW_CLIENTS = 6  # twice gunicorn's three sync workers


def test_slow_clients_hold_nginx_not_gunicorn_and_a_slow_big_upload_finishes(stack):
    base = start_web(stack, compose_commands())
    stack.manage("seed_registry")
    token = stack.manage("create_api_token", "stack-user").strip().splitlines()[-1]
    port = int(base.rsplit(":", 1)[1])
    slow = [_slow_body(port, token) for _ in range(SLOW_CLIENTS)]
    try:
        started = time.monotonic()
        page = requests.get(f"{base}/", headers=headers(), timeout=10)
        assert page.status_code == 200
        assert time.monotonic() - started < 2, "a page waited behind slow uploads"

        body, content_type = _upload_form(transcript_bytes=20 * 2**20)
        response = requests.post(
            f"{base}/api/v1/runs/",
            data=_Trickle(body, bytes_per_s=500_000),  # 0.5 MB/s
            headers=headers(token) | {"Content-Type": content_type},
            timeout=120,
        )
    except AssertionError:
        print(stack.output())
        raise
    finally:
        for connection in slow:
            connection.close()
    assert response.status_code == 201, response.text[:2000]
    created = response.json()
    assert created["status_url"].startswith("https://")  # the TLS proxy's X-Forwarded-Proto
    run = requests.get(f"{base}/api/v1/runs/{created['id']}/", headers=headers(token), timeout=10)
    assert run.status_code == 200 and run.json()["id"] == created["id"]


def _slow_body(port: int, token: str) -> socket.socket:
    """A connection that sends an upload's headers and the first bytes of its body, then waits."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=10)
    connection.sendall(
        b"POST /api/v1/runs/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n"
        + f"Authorization: Token {token}\r\n".encode()
        + b"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 1000000\r\n\r\n"
        + b"--x\r\n"
    )
    return connection


def _upload_form(*, transcript_bytes: int) -> tuple[bytes, str]:
    """The example run's upload with its transcript repeated to `transcript_bytes`."""
    lines = (EXAMPLE / "transcript.jsonl").read_bytes()
    transcript = lines * (transcript_bytes // len(lines) + 1)
    fields = example_fields() | {
        "solution": ("solution.py", (EXAMPLE / "solution.py").read_bytes()),
        "transcript": ("transcript.jsonl", transcript[:transcript_bytes]),
    }
    return encode_multipart_formdata(fields)


class _Trickle:
    """A request body read at `bytes_per_s` (its length known, so it goes with Content-Length:
    a client on a slow line, not a chunked one)."""

    def __init__(self, data: bytes, *, bytes_per_s: int) -> None:
        self.data, self.offset, self.bytes_per_s = data, 0, bytes_per_s
        self.started = time.monotonic()

    def __len__(self) -> int:
        return len(self.data)

    def read(self, size: int = -1) -> bytes:
        size = 65536 if size is None or size < 0 else min(size, 65536)
        chunk = self.data[self.offset : self.offset + size]
        self.offset += len(chunk)
        due = self.started + self.offset / self.bytes_per_s
        time.sleep(max(0.0, due - time.monotonic()))
        return chunk
