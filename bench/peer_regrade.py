"""A peer's published runs re-graded through the production path on one GPU host.

`manage.py import_runs kernelbench-hard` is the producer: it imports the peer's problems and
runs and queues each evaluation on ``gpu.h100-sxm``; N Celery workers, each pinned to one GPU
(``CUDA_VISIBLE_DEVICES``), claim and grade them; PostgreSQL and Redis hold the platform's
state. For a GPU machine with neither server, ``--servers DIR`` starts both there: PostgreSQL
from the ``pgserver`` wheel (which bundles its binaries) and ``redis-server`` from PATH. Run
from the repository root:

    python bench/peer_regrade.py --checkout PEER --problems DEST --out OUT --workers 4 \\
        [--servers DIR] [--problem 01_fp8_gemm ...] [--until EPOCH] [--kill-one] \\
        [--resume OUT_BEFORE/evaluations.jsonl ...] [--costs bench/results/peer_runs_h100.jsonl]

Writes, and rewrites every few seconds (a deadline leaves what was graded):
  OUT/evaluations.jsonl  one line per graded run: the source's run id, our evaluation (the
                         engine's result as stored, each text cut at its first line, the
                         worker, queue and grade times)
  OUT/regrade.json       evaluations per hour, grade time, queue wait, lost and graded-twice
                         counts, the evaluations per worker and their verdicts
  OUT/grades/            each grade's staff log (``ARENA_ENGINE_LOG_DIR``): its gates, shapes
                         and held-out failures as they ended
  OUT/worker-N.log       each worker's log
``--resume`` records earlier results (through ``services.evaluations.record_result``, before any
worker starts), and the reference timings they measured, so that a batch spread over several
machines grades each run once and times each baseline once; ``--costs`` (``bench/peer_runs.py``'s
grades, with their times on one GPU) queues the cheapest grades first, those never timed last;
``manage.py load_board`` builds the demo's fixture from these files.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from scaleout import (
    LEASE_S,
    cpu_shares,
    graded_ids,
    kill_busy,
    spread,
    start_servers,
    start_worker,
    stop,
)

ROOT = Path(__file__).resolve().parent.parent
QUEUE = "gpu.h100-sxm"
SWEEP_EVERY_S = 5
SAVE_EVERY_S = 15
COVER = 3  # runs of each problem queued before any problem's rest
# Cheapest first, so that a deadline leaves the most runs graded (medians of earlier grades).
ORDER = (
    "07_w4a16_gemm",
    "03_paged_attention",
    "05_topk_bitonic",
    "01_fp8_gemm",
    "02_kda_cutlass",
    "06_sonic_moe_swiglu",
)


def main() -> int:
    args = _parse()
    args.out.mkdir(parents=True, exist_ok=True)
    servers = start_servers(args.servers) if args.servers else []
    try:
        _configure(args)
        import django

        django.setup()
        report = _batch(args)
    finally:
        stop(*servers)
    print(json.dumps({k: v for k, v in report.items() if k != "evaluations"}, indent=2))
    return 0


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, required=True)
    parser.add_argument("--gpu", default="h100")
    parser.add_argument("--problems", type=Path, required=True, help="the imported problems")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=1, help="one per GPU: 0..N-1")
    parser.add_argument("--devices", help="the GPUs, one worker each (2,3): overrides --workers")
    parser.add_argument(
        "--servers", type=Path, help="start PostgreSQL and Redis in this scratch folder (emptied)"
    )
    parser.add_argument("--problem", action="append", default=[], help="only these (in order)")
    parser.add_argument("--until", type=float, help="stop at this epoch second")
    parser.add_argument("--kill-one", action="store_true", help="SIGKILL a busy worker halfway")
    parser.add_argument("--kill-after", type=int, help="... after this many grades (not halfway)")
    parser.add_argument("--resume", type=Path, action="append", default=[])
    parser.add_argument("--costs", type=Path, help="JSON lines of run_id and grade_s")
    args = parser.parse_args()
    args.devices = [int(d) for d in args.devices.split(",")] if args.devices else []
    args.devices = args.devices or list(range(args.workers))
    args.workers = len(args.devices)
    return args


def _configure(args: argparse.Namespace) -> None:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("ARENA_VAR_DIR", tempfile.mkdtemp(prefix="arena-regrade-"))
    os.environ.update(
        DJANGO_SETTINGS_MODULE="arena_web.settings",
        ARENA_EXTRA_PROBLEMS=str(args.problems.resolve()),
        CELERY_TASK_ALWAYS_EAGER="0",
        ARENA_PUBLISH_ON_GRADE="1",
        ARENA_EVAL_LEASE_S=str(LEASE_S),
        ARENA_EVAL_HEARTBEAT_S="5",
        ARENA_EVAL_REQUEUE_AFTER_S="600",
        ARENA_GPU_LOCK_DIR=str(args.out.resolve() / "gpu-locks"),
        ARENA_ENGINE_LOG_DIR=str(args.out.resolve() / "grades"),
        LOG_LEVEL="INFO",
    )


def _batch(args: argparse.Namespace) -> dict:
    from django.core.management import call_command

    from runners.kernelbench_hard import published
    from submissions.services.registry import seed_registry

    call_command("migrate", verbosity=0)
    seed_registry()
    call_command("sync_problems", verbosity=0)
    started = time.monotonic()
    lines = [line for path in args.resume for line in path.read_text().splitlines()]
    earlier = {json.loads(line)["source_run_id"] for line in lines}
    runs = published.published_runs(args.checkout, args.gpu)
    order = queue_order(runs, args.problem or ORDER, earlier, _costs(args.costs))
    call_command(
        "import_runs",
        "kernelbench-hard",
        str(args.checkout),
        "--gpu",
        args.gpu,
        "--problems",
        str(args.problems),
        *[arg for run_id in order for arg in ("--run", run_id)],
    )
    produced_s = time.monotonic() - started
    resumed = _resume(args.resume)
    shares = cpu_shares(len(args.devices))
    workers = {
        index: start_worker(QUEUE, index, args.out, cores=share)
        for index, share in zip(args.devices, shares, strict=True)
    }
    killed = None
    try:
        killed = _follow(args, workers, started, resumed)
    finally:
        stop(*workers.values())
    report = _report(args, time.monotonic() - started, produced_s, resumed, killed)
    _save(args.out, report)
    return report


def queue_order(
    runs: list[dict], problems, graded: set[str], costs: dict[str, float] | None = None
) -> list[str]:
    """The source's run ids in the order they are queued: those graded before first (recorded,
    not graded again), then up to COVER of each problem with fewer graded, then the rest; a
    deadline then leaves every problem on the board. Where `costs` gives a run's grade time,
    the cheaper run goes first (a run without one after those with one, in the source's order):
    a deadline then leaves the most runs graded."""
    costs = costs or {}

    def cost(run_id: str) -> float:
        return costs.get(run_id, math.inf)

    by_problem = {name: [r["run_id"] for r in runs if r["problem"] == name] for name in problems}
    done = [run_id for ids in by_problem.values() for run_id in ids if run_id in graded]
    pending = {
        name: sorted((i for i in ids if i not in graded), key=cost)
        for name, ids in by_problem.items()
    }
    cover = []
    for name, ids in pending.items():
        room = max(0, COVER - (len(by_problem[name]) - len(ids)))
        cover += ids[:room]
    rest = [run_id for ids in pending.values() for run_id in ids if run_id not in cover]
    return done + cover + sorted(rest, key=cost)


def _costs(path: Path | None) -> dict[str, float]:
    """Each run's latest grade time on one GPU (``bench/peer_runs.py``'s JSON lines)."""
    if path is None:
        return {}
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {line["run_id"]: line["grade_s"] for line in lines if line.get("grade_s")}


def _resume(files: list[Path]) -> set[int]:
    """Earlier machines' results recorded as graded here; the evaluation ids they filled."""
    from runners.schema import EvaluationResult
    from submissions.models import Evaluation
    from submissions.services.engine import store_baselines
    from submissions.services.evaluations import claim, record_result

    filled = set()
    for path in files:
        for line in path.read_text().splitlines():
            earlier = json.loads(line)
            store_baselines(EvaluationResult.from_dict(earlier["result"]))
            evaluation = Evaluation.objects.filter(
                run__source_result__run_id=earlier["source_run_id"], status="queued"
            ).first()
            if evaluation is None:
                continue
            held = claim(evaluation_id=evaluation.pk, worker=earlier["worker"])
            if held and record_result(held, EvaluationResult.from_dict(earlier["result"])):
                filled.add(evaluation.pk)
    return filled


def _follow(args, workers, started: float, resumed: set[int]) -> str | None:
    from submissions.models import Evaluation
    from submissions.services.evaluations import sweep

    killed, last_sweep, last_save = None, 0.0, 0.0
    half = (Evaluation.objects.count() - len(resumed)) // 2
    while Evaluation.objects.exclude(status__in=["done", "error"]).exists():
        if args.until and time.time() > args.until:
            break
        done = Evaluation.objects.filter(status="done").exclude(pk__in=resumed).count()
        if args.kill_one and killed is None and done >= (args.kill_after or half):
            killed = kill_busy(workers)
        if time.monotonic() - last_sweep > SWEEP_EVERY_S:
            sweep()
            last_sweep = time.monotonic()
        if time.monotonic() - last_save > SAVE_EVERY_S:
            _save(args.out, _report(args, time.monotonic() - started, 0, resumed, killed))
            last_save = time.monotonic()
        time.sleep(1)
    return killed


def _report(args, wall_s: float, produced_s: float, resumed: set[int], killed) -> dict:
    from submissions.models import Evaluation

    evaluations = list(
        Evaluation.objects.exclude(pk__in=resumed).select_related("run").prefetch_related("shapes")
    )
    done = [e for e in evaluations if e.status == "done"]
    waits = [(e.started_at - e.created_at).total_seconds() for e in done if e.started_at]
    grades = [(e.finished_at - e.started_at).total_seconds() for e in done if e.finished_at]
    graded = Counter(n for log in args.out.glob("worker-*.log") for n in graded_ids(log))
    return {
        "workers": args.workers,
        "killed": killed,
        "queued": len(evaluations),
        "graded": len(done),
        "resumed": len(resumed),
        "produced_s": round(produced_s, 1),
        "wall_s": round(wall_s, 1),
        "evaluations_per_hour": round(len(done) / wall_s * 3600, 1) if wall_s else None,
        "grade_s": spread(grades),
        "grade_s_sum": round(sum(grades), 1),
        "queue_wait_s": spread(waits),
        "not_done": Counter(e.status for e in evaluations if e.status != "done"),
        "graded_twice": sum(1 for count in graded.values() if count > 1),
        "requeued": sum(1 for e in done if e.attempts > 1),
        "per_worker": dict(Counter(e.worker_host.split("@")[0] for e in done)),
        "verdicts": dict(Counter(e.verdict for e in done)),
        "evaluations": [_line(e) for e in done],
    }


def _line(evaluation) -> dict:
    return {
        "source_run_id": evaluation.run.source_result.get("run_id"),
        "worker": evaluation.worker_host,
        "attempts": evaluation.attempts,
        "queued_at": evaluation.created_at.isoformat(),
        "started_at": evaluation.started_at.isoformat(),
        "finished_at": evaluation.finished_at.isoformat(),
        "result": first_lines(evaluation.result),
    }


def first_lines(value):
    """Each text of a result cut at its first line: compiler messages quote the source's code,
    which stays where the source publishes it."""
    if isinstance(value, str):
        return value.split("\n", 1)[0]
    if isinstance(value, dict):
        return {key: first_lines(item) for key, item in value.items()}
    if isinstance(value, list):
        return [first_lines(item) for item in value]
    return value


def _save(out: Path, report: dict) -> None:
    lines = "".join(json.dumps(line) + "\n" for line in report["evaluations"])
    _write(out / "evaluations.jsonl", lines)
    summary = {k: v for k, v in report.items() if k != "evaluations"}
    _write(out / "regrade.json", json.dumps(summary, indent=2))


def _write(path: Path, text: str) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(text)
    partial.replace(path)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a deadline's kill still saves
    raise SystemExit(main())
