"""The production stack for real: docker-compose.yml's web, CPU worker and beat commands,
started as they are written there (only the bind address changes) against the machine's
PostgreSQL and Redis, with DEBUG off and the static files collected as the Dockerfile does;
one run uploaded over HTTP is graded by the worker and shown by gunicorn.

CI runs it as a step of its own (ARENA_STACK_TEST=1); it needs DATABASE_URL (PostgreSQL) and
CELERY_BROKER_URL (Redis), and uses a database and a Redis database number of its own.
"""

import contextlib
import os
import re
import secrets
import shlex
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import dj_database_url
import psycopg
import pytest
import requests
import yaml
from django.conf import settings

from tests.workers.real_workers import free_port, wait_for

ROOT = Path(settings.BASE_DIR)
EXAMPLE = ROOT / "examples" / "softmax-run"
STACK_REDIS_DB = os.environ.get("ARENA_STACK_REDIS_DB", "9")
GRADE_TIMEOUT_S = 420

pytestmark = pytest.mark.skipif(
    os.environ.get("ARENA_STACK_TEST") != "1", reason="CI's production stack step sets it"
)


def compose_commands(port: int) -> dict[str, list[str]]:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    commands = {}
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


def upload_example(base: str, token: str) -> dict:
    files = [
        ("solution", ("solution.py", (EXAMPLE / "solution.py").read_bytes())),
        ("transcript", ("transcript.jsonl", (EXAMPLE / "transcript.jsonl").read_bytes())),
    ]
    fields = {
        "problem": "softmax",
        "model": "claude-opus-4-5",
        "harness": "claude-code",
        "hardware": "cpu",
        "effort": "high",
        "metadata": (EXAMPLE / "metadata.json").read_text(),
    }
    response = requests.post(
        f"{base}/api/v1/runs/", data=fields, files=files, headers=headers(token), timeout=60
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
    port = free_port()
    base, commands = f"http://127.0.0.1:{port}", compose_commands(port)
    stack.manage("collectstatic", "--noinput")  # the Dockerfile's build step
    stack.start("web", commands["web"], ROOT)
    stack.start("worker", commands["worker"], tmp_path)
    stack.start("beat", commands["beat"], tmp_path)
    try:
        wait_for(lambda: _answers(base), timeout=240, what="gunicorn to answer")
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


def _answers(base: str) -> bool:
    with contextlib.suppress(requests.ConnectionError):
        return requests.get(f"{base}/api/v1/", headers=headers(), timeout=5).status_code == 200
    return False
