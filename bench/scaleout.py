"""Scale-out on one host: N Celery workers, each pinned to one GPU, grading a batch of uploads.

Measures evaluations per hour, queue wait, and how the same solution's medians agree between
workers (GPUs); optionally SIGKILLs one worker mid-batch and counts evaluations lost or graded
twice. Run from the repository root, with PostgreSQL and Redis (a multi-GPU host):

    DATABASE_URL=postgres://... CELERY_BROKER_URL=redis://... \\
        python bench/scaleout.py --workers 1 2 4 --runs 24 --problem softmax --out OUT

On a GPU machine with neither server, ``--servers DIR`` starts both there (PostgreSQL from
the ``pgserver`` wheel, ``redis-server`` from PATH). Without any of these it runs on SQLite and
Celery's filesystem transport (one worker only: SQLite serializes writers). ``--device cpu``
is a dry run of the same path on the CPU: a CPU target on a ``gpu.`` queue, each worker
"pinned" to a device index no GPU backs, so the pinning, the per-GPU lock, the kill and the
counts are exercised; its timings say nothing.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "tests" / "runners" / "solutions"
TRANSCRIPT = ROOT / "tests" / "transcripts" / "samples" / "codex-exec-json-command.jsonl"
GRADED = re.compile(r"evaluation (\d+) graded: ")
LEASE_S = 20  # a killed worker's evaluation goes back to the queue this long after its heartbeat
SWEEP_EVERY_S = 5


def main() -> int:
    args = _parse()
    args.out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="arena-scaleout-"))
    servers = start_servers(args.servers) if args.servers else []
    try:
        _configure(scratch)
        import django

        django.setup()
        reports = [_batch(args, count, scratch / f"w{count}") for count in args.workers]
    finally:
        stop(*servers)
    (args.out / "scaleout.json").write_text(json.dumps(reports, indent=2))
    print(json.dumps([_headline(r) for r in reports], indent=2))
    return 0


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--problem", default="softmax")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--kill-one", action="store_true", help="SIGKILL a worker mid-batch")
    parser.add_argument("--timeout-s", type=float, default=1800)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--servers", type=Path, help="start PostgreSQL and Redis in this scratch folder (emptied)"
    )
    return parser.parse_args()


def _configure(scratch: Path) -> None:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    defaults = {"CELERY_BROKER_URL": "filesystem://", "ARENA_VAR_DIR": str(scratch / "var")}
    for name, value in defaults.items():
        os.environ.setdefault(name, value)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="arena_web.settings",
        CELERY_TASK_ALWAYS_EAGER="0",
        ARENA_PUBLISH_ON_GRADE="1",
        ARENA_EVAL_LEASE_S=str(LEASE_S),
        ARENA_EVAL_HEARTBEAT_S="5",
        ARENA_EVAL_REQUEUE_AFTER_S="60",
        ARENA_GPU_LOCK_DIR=str(scratch / "gpu-locks"),
        LOG_LEVEL="INFO",
    )


def _batch(args, count: int, folder: Path) -> dict:
    from django.core.management import call_command

    folder.mkdir(parents=True)
    call_command("migrate", verbosity=0)
    hardware = _target(args.device)
    shares = cpu_shares(count)
    workers = [
        start_worker(hardware.queue_name, index, folder, cores=shares[index])
        for index in range(count)
    ]
    try:
        started = time.monotonic()
        runs = [_upload(args.problem, hardware, f"{n} of batch {count}") for n in range(args.runs)]
        killed = _follow(args, runs, workers, started)
        wall_s = time.monotonic() - started
    finally:
        stop(*workers)
    return _report(args, count, runs, wall_s, killed, folder)


def _target(device: str):
    from django.core.management import call_command

    from submissions.models import HardwareTarget
    from submissions.services.registry import seed_registry

    seed_registry()
    call_command("sync_problems", verbosity=0)
    if device == "cuda":
        return HardwareTarget.objects.get(slug="h100-sxm")
    target, _ = HardwareTarget.objects.update_or_create(
        slug="cpu-pinned",
        defaults={
            "name": "CPU on a pinned queue (dry run)",
            "queue_name": "gpu.cpu-pinned",
            "device": HardwareTarget.Device.CPU,
            "is_ranked": False,
        },
    )
    return target


def start_servers(folder: Path) -> list[subprocess.Popen]:
    """PostgreSQL (pgserver's bundled binaries) and Redis, both local to this run."""
    import pgserver  # only on GPU machines without a server (a wheel that bundles PostgreSQL)

    shutil.rmtree(folder, ignore_errors=True)  # a scratch folder: no state of an earlier batch
    folder.mkdir(parents=True)
    os.environ["ARENA_VAR_DIR"] = str(folder / "var")
    database = pgserver.get_server(folder / "pg", cleanup_mode="stop")
    command = ["redis-server", "--port", "6390", "--bind", "127.0.0.1", "--save", ""]
    with open(folder / "redis.log", "wb") as log:
        redis = subprocess.Popen(
            [*command, "--appendonly", "no"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    os.environ["DATABASE_URL"] = database.get_uri()
    os.environ["CELERY_BROKER_URL"] = "redis://127.0.0.1:6390/0"
    for _ in range(50):
        probe = subprocess.run(["redis-cli", "-p", "6390", "ping"], capture_output=True, text=True)
        if probe.stdout.strip() == "PONG":
            break
        time.sleep(0.2)
    return [redis]


def start_worker(
    queue: str, index: int, folder: Path, cores: list[int] | None = None
) -> subprocess.Popen:
    """A Celery worker on GPU `index`; with `cores`, it and every process it starts (the
    engine, its builds, the candidate's OpenMP threads) run on those CPU cores alone."""
    command = [sys.executable, "-m", "celery", "-A", "arena_web", "worker", "-Q", queue]
    command += ["-c", "1", "--prefetch-multiplier", "1", "-n", f"gpu{index}@%h"]
    command += ["--without-mingle", "--without-gossip", "--loglevel", "INFO"]
    env = os.environ | {"CUDA_VISIBLE_DEVICES": str(index)}
    with open(folder / f"worker-{index}.log", "wb") as log:
        return subprocess.Popen(
            command,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores else None,
        )


def cpu_shares(count: int) -> list[list[int]]:
    """This process's CPU cores split into `count` equal shares, one per worker, so that one
    grade's builds and CPU work cannot starve another's timing (16 cores each on a 4-GPU host of
    64). Fewer cores than workers: no shares (every worker on all of them)."""
    cores = sorted(os.sched_getaffinity(0))
    size = len(cores) // count
    if size == 0:
        return [[] for _ in range(count)]
    return [cores[n * size : (n + 1) * size] for n in range(count)]


def _upload(problem: str, hardware, copy: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.models import HardwareTarget, Harness, LanguageModel, Problem
    from submissions.services.runs import create_run
    from submissions.uploads import IncomingFile, RunFiles

    # the same kernel each time, as distinct uploads (a comment makes each file its own: the
    # intake would take an identical upload of an earlier batch for that batch's run)
    code = (SOLUTIONS / problem / "honest.py").read_bytes() + f"\n# copy {copy}\n".encode()
    files = RunFiles(
        solution=IncomingFile("solution.py", SimpleUploadedFile("solution.py", code)),
        transcripts=[
            IncomingFile("transcript.jsonl", SimpleUploadedFile("t.jsonl", TRANSCRIPT.read_bytes()))
        ],
    )
    run, _ = create_run(
        submitter=None,
        problem=Problem.objects.get(slug=problem),
        language_model=LanguageModel.objects.get(slug="gpt-5-codex"),
        harness=Harness.objects.get(slug="codex-cli"),
        hardware=HardwareTarget.objects.get(pk=hardware.pk),
        files=files,
    )
    return run


def _follow(args, runs, workers, started: float) -> str | None:
    """Wait for every run's evaluation, sweeping as beat would; kill a worker halfway."""
    from submissions.models import Evaluation
    from submissions.services.evaluations import sweep

    killed, last_sweep = None, 0.0
    pending = Evaluation.objects.filter(run__in=runs).exclude(status__in=["done", "error"])
    while pending.exists() and time.monotonic() - started < args.timeout_s:
        done = Evaluation.objects.filter(run__in=runs, status="done").count()
        if args.kill_one and killed is None and len(workers) > 1 and done >= len(runs) // 2:
            killed = kill_busy(workers)
        if time.monotonic() - last_sweep > SWEEP_EVERY_S:
            sweep()
            last_sweep = time.monotonic()
        time.sleep(1)
    return killed


def kill_busy(workers) -> str:
    from submissions.models import Evaluation

    busy = Evaluation.objects.filter(status="running").values_list("worker_host", flat=True)
    names = [name for name in busy if name]
    index = int(re.match(r"gpu(\d+)@", names[0]).group(1)) if names else 0
    os.killpg(workers[index].pid, signal.SIGKILL)
    return f"gpu{index}"


def stop(*processes: subprocess.Popen, grace_s: float = 30) -> None:
    """SIGTERM each process group at once, then SIGKILL what still runs after `grace_s` (a
    Celery worker's warm shutdown waits for its grade: four in a row took two minutes)."""
    running = [process for process in processes if process.poll() is None]
    for process in running:
        os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for process in running:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _report(args, count: int, runs, wall_s: float, killed, folder: Path) -> dict:
    from submissions.models import Evaluation

    evaluations = list(Evaluation.objects.filter(run__in=runs).prefetch_related("shapes"))
    done = [e for e in evaluations if e.status == "done"]
    waits = [(e.started_at - e.created_at).total_seconds() for e in done if e.started_at]
    graded = Counter(m for log in folder.glob("worker-*.log") for m in graded_ids(log))
    return {
        "workers": count,
        "device": args.device,
        "problem": args.problem,
        "runs": len(runs),
        "killed": killed,
        "wall_s": round(wall_s, 1),
        "evaluations_per_hour": round(len(done) / wall_s * 3600, 1) if wall_s else None,
        "queue_wait_s": spread(waits),
        "lost": sum(1 for e in evaluations if e.status != "done"),
        "graded_twice": sum(1 for n in graded.values() if n > 1),
        "requeued": sum(1 for e in done if e.attempts > 1),
        "per_worker": dict(Counter(e.worker_host for e in done)),
        "timing_agreement": agreement(done),
        "grades": [
            {"worker": e.worker_host, "verdict": e.verdict, "reason": e.result.get("reason")}
            for e in done
        ],
    }


def graded_ids(log: Path) -> list[str]:
    return GRADED.findall(log.read_text(errors="replace"))


def spread(values: list[float]) -> dict:
    if not values:
        return {}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median": round(statistics.median(ordered), 2), "p95": round(p95, 2)}


def agreement(done) -> dict:
    """Per visible shape: the median time on each worker, and max/min - 1 between workers."""
    times: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for evaluation in done:
        for shape in evaluation.shapes.all():
            if shape.set != "hidden" and shape.median_us:
                label = f"{shape.set} {shape.index + 1}"
                times[label][evaluation.worker_host].append(shape.median_us)
    return {label: between(per_worker) for label, per_worker in sorted(times.items())}


def between(per_worker: dict[str, list[float]]) -> dict:
    medians = {worker: statistics.median(values) for worker, values in per_worker.items()}
    low, high = min(medians.values()), max(medians.values())
    return {
        "median_us": {w: round(m, 2) for w, m in sorted(medians.items())},
        "spread_pct": round(100 * (high / low - 1), 2) if low else None,
    }


def _headline(report: dict) -> dict:
    keys = ("workers", "evaluations_per_hour", "queue_wait_s", "lost", "graded_twice", "killed")
    return {key: report[key] for key in keys}


if __name__ == "__main__":
    raise SystemExit(main())
