"""Load on loopback: the board, a run page, a transcript page and the upload endpoint served by
gunicorn (docker-compose.yml's command, production settings) on PostgreSQL.

    createdb -h 127.0.0.1 -U postgres arena_load
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/arena_load \\
        .venv/bin/python bench/load.py [--seconds 15] [--clients 8 32] [--workers 3]

Fills the database with the synthetic board history and one uploaded run whose transcript is
parsed; uploads go to a private Redis (no worker consumes them). Each (page, clients) pair runs
for --seconds with that many threads, each keeping one connection; prints requests per second,
p50/p95/p99 latency and the count of non-2xx answers as a Markdown table. The client threads
share the machine with the server: on a small machine they are part of the load.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import requests
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EXAMPLE = ROOT / "examples" / "softmax-run"
HEADERS = {"X-Forwarded-Proto": "https"}  # what the TLS proxy in front of web sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL database made for the benchmark")
    with tempfile.TemporaryDirectory(prefix="arena-load-") as tmp, private_redis() as broker:
        env = production_env(Path(tmp), broker)
        os.environ.update(env)
        prepare(env)
        run_id, token = one_parsed_run()
        with gunicorn(env, args.workers) as base:
            targets = {
                "board `/`": get(base, "/"),
                "run page": get(base, f"/runs/{run_id}/"),
                "transcript page": get(base, f"/runs/{run_id}/transcript/"),
                "upload `POST /api/v1/runs/`": post_upload(base, token),
            }
            print("| page | clients | requests | req/s | p50 ms | p95 ms | p99 ms | errors |")
            print("|---|---|---|---|---|---|---|---|")
            for name, call in targets.items():
                for clients in args.clients:
                    print(row(name, clients, hammer(call, clients, args.seconds)), flush=True)


def production_env(tmp: Path, broker: str) -> dict[str, str]:
    return {
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "TRUST_X_FORWARDED_PROTO": "1",
        "STATIC_ROOT": str(tmp / "static"),
        "MEDIA_ROOT": str(tmp / "media"),
        "ARENA_VAR_DIR": str(tmp / "var"),
        "CELERY_BROKER_URL": broker,
        "ARENA_UPLOAD_RATE": "off",
        "ARENA_MAX_QUEUED_EVALUATIONS": "100000000",
        "LOG_LEVEL": "WARNING",
    }


class private_redis:
    def __enter__(self) -> str:
        self.port = free_port()
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""],
            stdout=subprocess.DEVNULL,
        )
        time.sleep(0.5)
        return f"redis://127.0.0.1:{self.port}/0"

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def prepare(env: dict[str, str]) -> None:
    for command in (
        ["migrate", "--noinput"],
        ["seed_registry"],
        ["sync_problems"],
        ["collectstatic", "--noinput"],
    ):
        subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=os.environ | env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    subprocess.run(  # the synthetic history the pages are loaded with
        [sys.executable, "bench/synthetic_history.py"],
        cwd=ROOT,
        env=os.environ | env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def one_parsed_run() -> tuple[str, str]:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena_web.settings")
    django.setup()

    from submissions.models import HardwareTarget, Harness, LanguageModel, Problem, Run
    from submissions.services.accounts import token_holder
    from submissions.services.runs import create_run, set_published
    from submissions.services.tokens import issue_token
    from submissions.services.transcripts import process_transcript
    from submissions.uploads import IncomingFile, RunFiles

    user, _ = token_holder(f"load-{uuid.uuid4().hex[:6]}")
    files = RunFiles(
        solution=IncomingFile("solution.py", example_file("solution.py", unique=True)),
        transcripts=[IncomingFile("transcript.jsonl", example_file("transcript.jsonl"))],
    )
    run, _ = create_run(
        submitter=user,
        problem=Problem.objects.get(slug="softmax"),
        language_model=LanguageModel.objects.get(slug="claude-opus-4-5"),
        harness=Harness.objects.get(slug="claude-code"),
        hardware=HardwareTarget.objects.get(slug="cpu"),
        files=files,
    )
    process_transcript(run=run)
    set_published(runs=Run.objects.filter(pk=run.pk), published=True)
    _, token = issue_token(user=user, name="load")
    return str(run.uuid), token


def example_file(name: str, *, unique: bool = False):
    from django.core.files.uploadedfile import SimpleUploadedFile

    suffix = f"# {uuid.uuid4()}\n".encode() if unique else b""  # the media folder is new
    return SimpleUploadedFile(name, (EXAMPLE / name).read_bytes() + suffix)


class gunicorn:
    def __init__(self, env: dict[str, str], workers: int) -> None:
        self.env, self.workers = env, workers

    def __enter__(self) -> str:
        port = free_port()
        compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["web"]
        command = shlex.split(compose["command"])[-1].split("&&")[-1].strip()
        command = command.replace("0.0.0.0:8000", f"127.0.0.1:{port}")
        command = command.replace("--workers 3", f"--workers {self.workers}")
        bin_dir = str(Path(sys.executable).parent)
        env = os.environ | self.env | {"PATH": bin_dir + os.pathsep + os.environ["PATH"]}
        self.process = subprocess.Popen(shlex.split(command), cwd=ROOT, env=env)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 240  # a loaded 2-core machine: its first answer took 8 s
        while not _up(base):
            if time.monotonic() > deadline:
                sys.exit("gunicorn did not answer within 240 s")
            time.sleep(0.5)
        return base

    def __exit__(self, *exc) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _up(base: str) -> bool:
    try:
        return requests.get(base + "/api/v1/", headers=HEADERS, timeout=10).ok
    except requests.RequestException:  # not listening yet, or a first answer slower than 10 s
        return False


def get(base: str, path: str):
    def call(session: requests.Session) -> int:
        return session.get(base + path, headers=HEADERS, timeout=60).status_code

    return call


def post_upload(base: str, token: str):
    headers = HEADERS | {"Authorization": f"Token {token}"}
    transcript = (EXAMPLE / "transcript.jsonl").read_bytes()
    fields = {"problem": "softmax", "model": "claude-opus-4-5", "harness": "claude-code"}
    fields["hardware"] = "cpu"

    def call(session: requests.Session) -> int:
        solution = (EXAMPLE / "solution.py").read_bytes() + f"# {uuid.uuid4()}\n".encode()
        files = [("solution", ("solution.py", solution)), ("transcript", ("t.jsonl", transcript))]
        response = session.post(
            base + "/api/v1/runs/", data=fields, files=files, headers=headers, timeout=60
        )
        return response.status_code

    return call


def hammer(call, clients: int, seconds: float) -> dict:
    latencies: list[float] = []
    errors = [0]
    deadline = time.monotonic() + seconds
    lock = threading.Lock()

    def client() -> None:
        session = requests.Session()
        while time.monotonic() < deadline:
            start = time.perf_counter()
            try:
                status = call(session)
            except requests.RequestException:  # a refused or cut connection, a timeout
                status = None  # a failure like any non-2xx answer, and the client goes on
            took = time.perf_counter() - start
            with lock:
                latencies.append(took)
                errors[0] += status is None or not 200 <= status < 300

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"latencies": latencies, "errors": errors[0], "elapsed": time.monotonic() - started}


def row(name: str, clients: int, result: dict) -> str:
    latencies = sorted(result["latencies"])
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    p50, p95, p99 = (cuts[i] * 1000 for i in (49, 94, 98))
    rate = len(latencies) / result["elapsed"]
    return (
        f"| {name} | {clients} | {len(latencies)} | {rate:.1f} | {p50:.0f} | {p95:.0f} | "
        f"{p99:.0f} | {result['errors']} |"
    )


if __name__ == "__main__":
    main()
