"""Fault injection: uploads graded by real Celery workers while workers, Redis and PostgreSQL die.

Starts a private PostgreSQL cluster (port 5441) and a private Redis that keeps nothing on disk
(port 6391), N workers on the CPU target's queue, then uploads runs in bursts through
``services.runs.create_run`` while it SIGKILLs workers at random moments (a busy one when there is
one; each is started again, as a supervisor would), restarts Redis and PostgreSQL (each just after
a burst), while docker-compose.yml's beat command (beat and the sweep queue's worker) sweeps as in
production: evaluations whose worker died, and transcript parsings whose message was lost. Then it
counts runs lost (no finished evaluation), evaluations graded twice (the workers' own "evaluation
N graded:" lines), runs stuck (queued or running after a whole sweeper period with no progress),
transcripts stuck (still pending) and the time to recover after each fault. Run from the
repository root:

    python bench/faults.py --runs 40 --workers 3 --kills 20 --out OUT

``--engine fake`` (default) grades with tests/workers/fake_engine.py, a ``sleep=N`` directive
standing for a grade of ``--grade-s`` seconds; ``--engine real`` runs the real engine on the CPU.
"""

import argparse
import io
import json
import logging
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

import yaml
from scaleout import GRADED, SOLUTIONS, TRANSCRIPT, stop

ROOT = Path(__file__).resolve().parent.parent
FAKE_ENGINE = ROOT / "tests" / "workers" / "fake_engine.py"
PG_BIN = Path("/usr/lib/postgresql/15/bin")
LEASE_S = 10
HEARTBEAT_S = 2
REQUEUE_AFTER_S = 30
SWEEP_EVERY_S = 5
# a whole sweeper period: a lapsed lease taken back, a lost message resent, and room to spare
QUIET_S = LEASE_S + REQUEUE_AFTER_S + 2 * SWEEP_EVERY_S
FINISHED = ("done", "error")
BURST_LEAD_S = 3


def main() -> int:
    args = _parse()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the servers on the way out
    args.out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="arena-faults-"))
    try:
        with _redis(args.redis_port) as redis_server, _postgres(scratch, args.pg_port) as pg:
            _configure(args, redis_server, pg)
            report = _bench(args, redis_server, pg)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    (args.out / "faults.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(_headline(report), indent=2))
    return 0


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--redis-restarts", type=int, default=2)
    parser.add_argument("--pg-restarts", type=int, default=1)
    parser.add_argument("--engine", choices=["fake", "real"], default="fake")
    parser.add_argument("--grade-s", type=float, default=4, help="the fake engine's grade")
    parser.add_argument("--problem", default="row_sum")
    parser.add_argument("--phase-s", type=float, default=120, help="uploads and faults span")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--redis-port", type=int, default=6391)
    parser.add_argument("--pg-port", type=int, default=5441)
    parser.add_argument("--timeout-s", type=float, default=480)
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args()


class Redis:
    def __init__(self, port: int) -> None:
        self.port, self.url, self.process = port, f"redis://127.0.0.1:{port}/0", None

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        _until(lambda: _answers(["redis-cli", "-p", str(self.port), "ping"]), "redis")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def queue_length(self, name: str) -> int:
        found = subprocess.run(
            ["redis-cli", "-p", str(self.port), "llen", name], capture_output=True
        )
        return int(found.stdout or 0)


class Postgres:
    def __init__(self, folder: Path, port: int) -> None:
        self.folder, self.port = folder, port
        self.url = f"postgres://postgres@127.0.0.1:{port}/arena_faults"

    def init(self) -> None:
        if os.geteuid() == 0:  # the server refuses to run as root
            self.folder.parent.chmod(0o755)
            self.folder.mkdir()
            shutil.chown(self.folder, "postgres", "postgres")
        _quiet([PG_BIN / "initdb", "-D", self.folder, "-U", "postgres", "--auth=trust"])
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1"
        _quiet([PG_BIN / "pg_ctl", "-D", self.folder, "-o", options, "-w", "start"])
        _quiet(
            [
                PG_BIN / "createdb",
                "-h",
                "127.0.0.1",
                "-p",
                self.port,
                "-U",
                "postgres",
                "arena_faults",
            ]
        )

    def restart(self) -> None:
        _quiet([PG_BIN / "pg_ctl", "-D", self.folder, "-m", "fast", "-w", "restart"])

    def stop(self) -> None:
        _quiet([PG_BIN / "pg_ctl", "-D", self.folder, "-m", "fast", "-w", "stop"], check=False)


@contextmanager
def _redis(port: int):
    server = Redis(port)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def _postgres(scratch: Path, port: int):
    server = Postgres(scratch / "pg", port)
    try:
        server.init()
        yield server
    finally:
        server.stop()


def _quiet(command: list, check: bool = True) -> None:
    as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    # DEVNULL, not pipes: the server started by pg_ctl would hold a pipe open for good
    out = subprocess.DEVNULL
    subprocess.run([*as_owner, *map(str, command)], check=check, stdout=out, stderr=out)


def _answers(command: list[str]) -> bool:
    return subprocess.run(command, capture_output=True).returncode == 0


def _until(condition, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up in {timeout}s")
        time.sleep(0.2)


def _configure(args, redis_server: Redis, pg: Postgres) -> None:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    os.environ.update(
        DJANGO_SETTINGS_MODULE="arena_web.settings",
        DATABASE_URL=pg.url,
        DB_CONN_MAX_AGE="0",
        CELERY_BROKER_URL=redis_server.url,
        CELERY_TASK_ALWAYS_EAGER="0",
        ARENA_VAR_DIR=str(args.out / "var"),
        MEDIA_ROOT=str(args.out / "media"),
        ARENA_PUBLISH_ON_GRADE="1",
        ARENA_UPLOAD_RATE="off",
        ARENA_MAX_QUEUED_EVALUATIONS=str(10 * args.runs),
        ARENA_EVAL_LEASE_S=str(LEASE_S),
        ARENA_EVAL_HEARTBEAT_S=str(HEARTBEAT_S),
        ARENA_EVAL_REQUEUE_AFTER_S=str(REQUEUE_AFTER_S),
        ARENA_SWEEP_EVERY_S=str(SWEEP_EVERY_S),
        ARENA_GPU_LOCK_DIR=str(args.out / "gpu-locks"),
        FAKE_ENGINE_LOG=str(args.out / "logs" / "engine.log"),
        LOG_LEVEL="INFO",
    )
    if args.engine == "fake":
        os.environ["ARENA_ENGINE_COMMAND"] = shlex.join([sys.executable, str(FAKE_ENGINE)])
    (args.out / "logs").mkdir(exist_ok=True)


def _bench(args, redis_server: Redis, pg: Postgres) -> dict:
    import django
    from django.core.management import call_command

    django.setup()
    _log_to(args.out / "logs" / "driver.log")
    from submissions.services.registry import seed_registry

    call_command("migrate", verbosity=0)
    seed_registry()
    call_command("sync_problems", verbosity=0, stdout=io.StringIO())
    workers = Workers(args.workers, args.out / "logs")
    sweeper = Sweeper(args.out / "logs" / "beat.log")
    faults = Faults(args, workers, sweeper, redis_server, pg)
    try:
        started = time.time()
        runs = faults.play(_schedule(args))
        settled = faults.settle(runs, started + args.timeout_s)
    finally:
        workers.stop_all()
        sweeper.stop()
    return _report(args, runs, faults, settled, started)


def _log_to(path: Path) -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)


def _schedule(args) -> list[tuple[float, str]]:
    """(seconds from the start, event): kills at random moments; Redis and PostgreSQL restarted
    through the middle of the phase, each 3 s after a burst of uploads so that grades are
    queued and running when it goes down; one more burst at the start."""
    rng = random.Random(args.seed)
    restarts = ["redis"] * args.redis_restarts
    middle = len(restarts) // 2
    restarts[middle:middle] = ["postgres"] * args.pg_restarts
    at = [args.phase_s * (n + 1) / (len(restarts) + 1) for n in range(len(restarts))]
    bursts = [0.0] + [t - BURST_LEAD_S for t in at]
    events = [(bursts[n * len(bursts) // args.runs], "upload") for n in range(args.runs)]
    events += [(rng.uniform(2, args.phase_s), "kill") for _ in range(args.kills)]
    events += list(zip(at, restarts, strict=True))
    return sorted(events, key=lambda event: event[0])


class Workers:
    """``celery worker`` processes on the CPU queue, one grade at a time each."""

    def __init__(self, count: int, folder: Path) -> None:
        self.folder = folder
        self.born: dict[int, float] = {}
        self.processes = [self._spawn(index) for index in range(count)]
        self.dead: dict[int, float] = {}

    def _spawn(self, index: int) -> subprocess.Popen:
        command = [sys.executable, "-m", "celery", "-A", "arena_web", "worker", "-Q", "cpu"]
        command += ["-c", "1", "--prefetch-multiplier", "1", "-n", f"cpu{index}@%h"]
        command += ["--without-mingle", "--without-gossip", "--loglevel", "INFO"]
        self.born[index] = time.time()
        with open(self.folder / f"worker-{index}.log", "ab") as log:
            return subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def kill(self, index: int) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.processes[index].pid, signal.SIGKILL)
        self.processes[index].wait()
        self.dead[index] = time.monotonic()

    def respawn_due(self, after_s: float = 1.0) -> None:
        for index, when in list(self.dead.items()):
            if time.monotonic() - when >= after_s:
                self.processes[index] = self._spawn(index)
                del self.dead[index]

    def alive(self) -> list[int]:
        return [i for i in range(len(self.processes)) if i not in self.dead]

    def stop_all(self) -> None:
        stop(*self.processes, grace_s=20)


class Sweeper:
    """docker-compose.yml's beat command: beat, and the one worker of the sweep queue; started
    again if it ever ends (as a supervisor would), never killed on purpose."""

    def __init__(self, log: Path) -> None:
        command = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["beat"]
        self.command = shlex.split(" ".join(command["command"].split()))
        self.command[0:1] = [sys.executable, "-m", "celery"]
        self.log, self.starts = log, 0
        self.process = self._spawn()

    def _spawn(self) -> subprocess.Popen:
        self.starts += 1
        with open(self.log, "ab") as out:
            return subprocess.Popen(
                [*self.command, "--loglevel", "INFO"],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.log.parent,  # beat's schedule file
            )

    def ensure_running(self) -> None:
        if self.process.poll() is not None:
            self.process = self._spawn()

    def stop(self) -> None:
        stop(self.process, grace_s=20)

    def report(self) -> dict:
        """What the sweeps did, from the sweep worker's log."""
        text = self.log.read_text(errors="replace")
        resent = [
            int(n) for n in re.findall(r"sweeper: (\d+) transcript parsings sent again", text)
        ]
        return {
            "process_starts": self.starts,
            "sweeps": len(
                re.findall(r"Task submissions\.sweep_evaluations\[[^]]+\] succeeded", text)
            ),
            "sweeps_that_acted": text.count("sweeper: SweepReport("),
            "transcript_resends": sum(resent),
        }


class Faults:
    """Plays the schedule while the sweeper runs, and follows each fault to its recovery."""

    def __init__(
        self, args, workers: Workers, sweeper: Sweeper, redis_server: Redis, pg: Postgres
    ) -> None:
        self.args, self.workers, self.sweeper = args, workers, sweeper
        self.redis, self.pg = redis_server, pg
        self.rng = random.Random(args.seed + 1)
        self.log: list[dict] = []
        self.upload_retries = 0

    def play(self, schedule: list[tuple[float, str]]) -> list:
        runs, start = [], time.monotonic()
        for offset, event in schedule:
            while time.monotonic() - start < offset:
                self.tick()
                time.sleep(0.2)
            if event == "upload":
                runs.append(self.upload(len(runs)))
            else:
                self.inject(event)
        return runs

    def tick(self) -> None:
        self.workers.respawn_due()
        self.sweeper.ensure_running()
        _guarded(self.follow)

    def upload(self, n: int):
        while True:
            try:
                return _upload(self.args, n)
            except Exception:  # the database or broker is down: upload again
                logging.getLogger(__name__).exception("upload %s refused; again", n)
                self.upload_retries += 1
                _reconnect()
                self.tick()
                time.sleep(1)

    def inject(self, kind: str) -> None:
        fault = {"kind": kind, "at": time.time(), "affected": {}, "taken_back_at": None}
        if kind == "kill":
            fault["affected"], fault["worker"] = self._kill_one()
        else:
            fault["affected"] = self._grading()
            fault["queued_messages"] = self.redis.queue_length("cpu")
            fault["down_s"] = self._restart(kind)
        fault["done_at"] = None
        self.log.append(fault)

    def _kill_one(self) -> tuple[dict, int]:
        alive = self.workers.alive()
        busy = self._grading()
        by_worker = {_index(host): pk for pk, (host, _) in busy.items()}
        targets = [i for i in alive if i in by_worker] or alive
        index = self.rng.choice(targets)
        affected = {pk: busy[pk] for pk in [by_worker.get(index)] if pk is not None}
        self.workers.kill(index)
        return affected, index

    def _grading(self) -> dict:
        """Evaluations a live worker is grading now: {pk: (worker, attempt)}. A killed or
        cancelled grade stays "running" until its lease lapses: claims from an earlier life of
        the worker, or without a recent heartbeat, are not counted."""
        rows = _guarded(_running) or []
        live, fresh = set(self.workers.alive()), time.time() - 2 * HEARTBEAT_S - 1
        return {
            pk: (host, attempts)
            for pk, host, attempts, started, beat in rows
            if _index(host) in live
            and started.timestamp() >= self.workers.born[_index(host)]
            and beat.timestamp() >= fresh
        }

    def _restart(self, kind: str) -> float:
        began = time.monotonic()
        if kind == "redis":
            self.redis.stop()
            time.sleep(1)
            self.redis.start()
        else:
            self.pg.restart()
        return round(time.monotonic() - began, 2)

    def follow(self) -> None:
        """Note when each fault's evaluations left the attempt they were in, and were graded."""
        from submissions.models import Evaluation

        for fault in self.log:
            if fault["done_at"] is not None:
                continue
            rows = Evaluation.objects.filter(pk__in=fault["affected"]).values_list(
                "pk", "status", "attempts", "worker_host"
            )
            now = time.time()
            moved = all(
                (status, attempts) != ("running", fault["affected"][pk][1])
                for pk, status, attempts, _ in rows
            )
            if moved and fault["taken_back_at"] is None:
                fault["taken_back_at"] = now
            if all(status in FINISHED for _, status, _, _ in rows):
                fault["done_at"] = now

    def settle(self, runs, deadline: float) -> dict:
        """Wait until every run is finished and its transcript parsed, or nothing changed for a
        whole sweeper period."""
        last, changed = None, time.monotonic()
        while time.time() < deadline:
            self.tick()
            state = _guarded(lambda: _progress(runs))
            if state is not None and state != last:
                last, changed = state, time.monotonic()
            if state and state[0] == len(runs) and state[2] == 0:
                return {"all_finished": True, "quiet_s": None}
            if time.monotonic() - changed > QUIET_S:
                return {"all_finished": False, "quiet_s": QUIET_S}
            time.sleep(0.5)
        return {"all_finished": False, "quiet_s": None, "timed_out": True}


def _guarded(action):
    from django.db import Error as DatabaseError
    from kombu.exceptions import KombuError

    try:
        return action()
    except (DatabaseError, KombuError, OSError):
        logging.getLogger(__name__).exception("%s failed during a fault", action)
        _reconnect()
        return None


def _reconnect() -> None:
    from django.db import connection

    connection.close()


def _running() -> dict:
    from submissions.models import Evaluation

    # oldest first: where a worker holds two claims (one lapsing), the later one wins
    rows = Evaluation.objects.filter(status="running").order_by("started_at")
    return list(rows.values_list("pk", "worker_host", "attempts", "started_at", "heartbeat_at"))


def _index(host: str) -> int:
    return int(host.removeprefix("cpu").partition("@")[0])


def _progress(runs) -> tuple[int, int, int]:
    """Runs finished, attempts made, transcripts still pending."""
    from submissions.models import Evaluation, Run

    mine = Evaluation.objects.filter(run__in=runs)
    finished = mine.filter(status__in=FINISHED).values("run_id").distinct().count()
    pending = Run.objects.filter(pk__in=[run.pk for run in runs], transcript_status="pending")
    return finished, sum(mine.values_list("attempts", flat=True)), pending.count()


def _upload(args, n: int):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.models import Harness, LanguageModel, Problem
    from submissions.services.registry import ensure_cpu_target
    from submissions.services.runs import create_run
    from submissions.uploads import IncomingFile, RunFiles

    code = (SOLUTIONS / args.problem / "honest.py").read_bytes()
    if args.engine == "fake":
        code += f"\n# fake: sleep={args.grade_s}\n".encode()
    code += f"# upload {n}\n".encode()  # each upload its own run
    files = RunFiles(
        solution=IncomingFile("solution.py", SimpleUploadedFile("solution.py", code)),
        transcripts=[
            IncomingFile("transcript.jsonl", SimpleUploadedFile("t.jsonl", TRANSCRIPT.read_bytes()))
        ],
    )
    run, _ = create_run(
        submitter=None,
        problem=Problem.objects.get(slug=args.problem),
        language_model=LanguageModel.objects.get(slug="gpt-5-codex"),
        harness=Harness.objects.get(slug="codex-cli"),
        hardware=ensure_cpu_target(),
        files=files,
    )
    return run


def _report(args, runs, faults: Faults, settled: dict, started: float) -> dict:
    from submissions.models import Evaluation

    evaluations = list(Evaluation.objects.filter(run__in=runs))
    recovery = [_recovery(fault, evaluations) for fault in faults.log]
    return {
        "engine": args.engine,
        "grade_s": args.grade_s if args.engine == "fake" else None,
        "runs": len(runs),
        "workers": args.workers,
        "settings": {"lease_s": LEASE_S, "requeue_s": REQUEUE_AFTER_S, "sweep_s": SWEEP_EVERY_S},
        "wall_s": round(time.time() - started, 1),
        "settled": settled,
        **_outcome(args, runs, evaluations),
        "run_status": _tally(runs, "status"),
        "transcripts": _tally(runs, "transcript_status"),
        "stuck_transcripts": _tally(runs, "transcript_status").get("pending", 0),
        "upload_retries": faults.upload_retries,
        "swept": faults.sweeper.report(),
        "engine_starts": _engine_starts(args) if args.engine == "fake" else None,
        "faults": recovery,
        "recovery": _by_kind(recovery),
        "load_average": os.getloadavg(),
    }


def _outcome(args, runs, evaluations) -> dict:
    finished = {e.run_id for e in evaluations if e.status in FINISHED}
    graded = Counter(m for log in args.out.glob("logs/worker-*.log") for m in _graded_ids(log))
    per_run = Counter(e.run_id for e in evaluations)
    done = [e for e in evaluations if e.status == "done"]
    return {
        "lost": len({run.pk for run in runs} - finished),
        "stuck": [
            {"id": e.pk, "status": e.status, "attempts": e.attempts}
            for e in evaluations
            if e.status not in FINISHED
        ],
        "never_queued": sum(1 for run in runs if run.pk not in per_run),
        "graded_twice": sorted(int(pk) for pk, n in graded.items() if n > 1),
        "graded_lines": sum(graded.values()),
        "evaluations_per_run_max": max(per_run.values(), default=0),
        "done": len(done),
        "last_attempt_s": _spread([(e.finished_at - e.started_at).total_seconds() for e in done]),
        "gave_up": [
            {"id": e.pk, "reason": e.reason[:200]} for e in evaluations if e.status == "error"
        ],
        "attempts": dict(Counter(e.attempts for e in evaluations)),
    }


def _tally(runs, field: str) -> dict:
    from submissions.models import Run

    return dict(
        Counter(Run.objects.filter(pk__in=[r.pk for r in runs]).values_list(field, flat=True))
    )


def _graded_ids(log: Path) -> list[str]:
    return GRADED.findall(log.read_text(errors="replace"))


def _engine_starts(args) -> int:
    path = args.out / "logs" / "engine.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return sum(line.startswith("start") for line in lines)


def _recovery(fault: dict, evaluations) -> dict:
    """Seconds from the fault to: its evaluations taken back, graded; the next grade anywhere."""
    at = fault["at"]
    after = [
        e.finished_at.timestamp()
        for e in evaluations
        if e.finished_at and e.finished_at.timestamp() > at
    ]
    row = {
        "kind": fault["kind"],
        "at": datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds"),
        "affected": sorted(fault["affected"]),
        "taken_back_s": _since(at, fault["taken_back_at"]) if fault["affected"] else None,
        "graded_s": _since(at, fault["done_at"]) if fault["affected"] else None,
        "next_grade_s": _since(at, min(after, default=None)),
    }
    for key in ("worker", "down_s", "queued_messages"):
        if key in fault:
            row[key] = fault[key]
    return row


def _since(at: float, then: float | None) -> float | None:
    return None if then is None else round(then - at, 1)


def _by_kind(rows: list[dict]) -> dict:
    kinds = {}
    for kind in sorted({row["kind"] for row in rows}):
        mine = [row for row in rows if row["kind"] == kind]
        kinds[kind] = {
            "count": len(mine),
            "hit_a_grade": sum(1 for row in mine if row["affected"]),
            **{
                key: _spread([row[key] for row in mine])
                for key in ("taken_back_s", "graded_s", "next_grade_s")
            },
        }
    return kinds


def _spread(values: list) -> dict:
    known = sorted(v for v in values if v is not None)
    if not known:
        return {}
    return {"median": round(statistics.median(known), 1), "max": known[-1], "n": len(known)}


def _headline(report: dict) -> dict:
    keys = (
        "runs",
        "lost",
        "stuck",
        "graded_twice",
        "gave_up",
        "stuck_transcripts",
        "transcripts",
        "swept",
        "settled",
        "recovery",
        "load_average",
    )
    return {key: report[key] for key in keys}


if __name__ == "__main__":
    raise SystemExit(main())
