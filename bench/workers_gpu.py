"""Uploads graded by a real Celery worker on one GPU: throughput, the baseline cache, and a check
that the stored result matches a direct ``python -m runners evaluate`` of the same solution.

Self-contained for the GPU machine, which has no Redis or PostgreSQL: SQLite under a temporary
ARENA_VAR_DIR and Celery's filesystem transport. Run from the repository root:

    python bench/workers_gpu.py --device cuda --out OUT_DIR [--problem SLUG ...] [--budget-s 360]

``--device cpu`` grades on the CPU target instead (a dry run of the same path).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "tests" / "runners" / "solutions"
TRANSCRIPT = ROOT / "tests" / "transcripts" / "samples" / "codex-exec-json-command.jsonl"
STARTED = time.monotonic()


def main() -> int:
    args = _parse()
    args.out.mkdir(parents=True, exist_ok=True)
    _configure(Path(tempfile.mkdtemp(prefix="arena-bench-")))
    import django

    django.setup()
    hardware, token = _prepare(args.device)
    worker = _start_worker(hardware.queue_name, args.out / "worker.log")
    try:
        report = _bench(args, hardware, token)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    _save(args, report)
    print(json.dumps(_headline(report), indent=2))
    return 0


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--problem", action="append", dest="problems")
    parser.add_argument("--budget-s", type=float, default=360.0)
    return parser.parse_args()


def _configure(var_dir: Path) -> None:
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    os.environ.update(
        DJANGO_SETTINGS_MODULE="arena_web.settings",
        ARENA_VAR_DIR=str(var_dir),
        CELERY_BROKER_URL="filesystem://",
        ALLOWED_HOSTS="testserver,localhost",
        LOG_LEVEL="WARNING",
    )


def _prepare(device: str):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from submissions.models import HardwareTarget
    from submissions.services.registry import (
        engine_problems,
        ensure_cpu_target,
        seed_registry,
        sync_problems,
    )
    from submissions.services.tokens import issue_token

    call_command("migrate", verbosity=0)
    sync_problems(infos=engine_problems())
    seed_registry()
    user = get_user_model().objects.create_user("bench", is_staff=True)
    _, token = issue_token(user=user, name="bench")
    if device == "cpu":
        return ensure_cpu_target(), token
    return HardwareTarget.objects.get(slug=_gpu_slug()), token


def _gpu_slug() -> str:
    name = subprocess.run(
        ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()[0]
    return "h200" if "H200" in name else "h100-sxm"


def _start_worker(queue: str, log: Path) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "arena_web",
        "worker",
        "-Q",
        queue,
        "-c",
        "1",
        "--pool",
        "prefork",
        "--loglevel",
        "INFO",
    ]
    with open(log, "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)


def _bench(args, hardware, token: str) -> dict:
    from submissions.models import Problem

    deck = Problem.objects.filter(slug__in=args.problems) if args.problems else Problem.objects
    slugs = [p.slug for p in deck.order_by("slug") if (SOLUTIONS / p.slug / "honest.py").exists()]
    report = {"hardware": hardware.slug, "device": args.device, "problems": slugs}
    uploaded = [_upload(slug, hardware, token) for slug in slugs]
    report["first"] = _timed_wave([_first_evaluation(run) for run in uploaded])
    _save(args, report)
    first = report["first"]["evaluations"]
    report["direct"] = [_compare_with_cli(first[0], args.device)]
    _save(args, report)
    if _time_left(args) > 0.6 * report["first"]["span_s"]:  # a cached regrade takes about half
        report["regrade"] = _timed_wave(_reevaluate(uploaded, hardware))
    report["direct"] += [
        _compare_with_cli(evaluation, args.device)
        for evaluation in first[1:]
        if _time_left(args) > 1.5 * evaluation["wall_s"]
    ]
    return report


def _save(args, report: dict) -> None:
    (args.out / "workers_gpu.json").write_text(json.dumps(report, indent=2, default=str))


def _time_left(args) -> float:
    return args.budget_s - (time.monotonic() - STARTED)


def _upload(slug: str, hardware, token: str):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from rest_framework.test import APIClient

    from submissions.models import Run

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    form = {
        "problem": slug,
        "model": "gpt-5-codex",
        "harness": "codex-cli",
        "hardware": hardware.slug,
        "solution": SimpleUploadedFile(
            "solution.py", (SOLUTIONS / slug / "honest.py").read_bytes()
        ),
        "transcript": [SimpleUploadedFile("transcript.jsonl", TRANSCRIPT.read_bytes())],
    }
    response = api.post("/api/v1/runs/", form, format="multipart")
    assert response.status_code == 201, response.content
    return Run.objects.get(uuid=response.json()["id"])


def _first_evaluation(run):
    from submissions.models import Evaluation

    deadline = time.monotonic() + 30
    while not (evaluation := Evaluation.objects.filter(run=run).first()):
        assert time.monotonic() < deadline, f"no evaluation queued for {run.uuid}"
        time.sleep(0.2)
    return evaluation


def _reevaluate(runs, hardware):
    from submissions.services.evaluations import reevaluate

    return reevaluate(runs=runs, hardware=hardware)


def _timed_wave(evaluations) -> dict:
    """Wait for a batch queued together; the worker grades them one after another."""
    queued_at = time.monotonic()
    finished = [_wait(evaluation) for evaluation in evaluations]
    span = time.monotonic() - queued_at
    return {
        "span_s": round(span, 1),
        "per_hour": round(3600 * len(finished) / span, 1),
        "evaluations": [_summary(e) for e in finished],
    }


def _wait(evaluation, timeout: float = 900):
    deadline = time.monotonic() + timeout
    while evaluation.status not in ("done", "error"):
        assert time.monotonic() < deadline, f"evaluation {evaluation.pk} did not finish"
        time.sleep(0.5)
        evaluation.refresh_from_db()
    return evaluation


def _summary(evaluation) -> dict:
    cost = evaluation.result.get("cost", {})
    return {
        "id": evaluation.pk,
        "problem": evaluation.run.problem.slug,
        "trigger": evaluation.trigger,
        "verdict": evaluation.verdict,
        "reason": evaluation.reason[:300],
        "score": evaluation.score,
        "hidden_score": evaluation.hidden_score,
        "wall_s": round((evaluation.finished_at - evaluation.started_at).total_seconds(), 1),
        "engine_total_s": cost.get("total_s"),
        "baselines_s": cost.get("baselines_s"),
        "baselines_cached": sum(
            s.get("baseline_cached", False) for s in evaluation.result.get("shapes", [])
        ),
        "gpu": evaluation.environment.get("gpu"),
    }


def _compare_with_cli(summary: dict, device: str) -> dict:
    from submissions.models import Evaluation

    stored = Evaluation.objects.get(pk=summary["id"]).result
    from submissions.services.engine import cached_baselines

    folder = Path(tempfile.mkdtemp())
    out, baselines = folder / "direct.json", folder / "baselines.json"
    baselines.write_text(json.dumps(cached_baselines(problem_version=stored["problem_version"])))
    solution = SOLUTIONS / summary["problem"] / "honest.py"
    started = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "runners",
            "evaluate",
            "--problem",
            summary["problem"],
            "--solution",
            str(solution),
            "--device",
            device,
            "--json",
            str(out),
            "--baselines",
            str(baselines),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    direct = json.loads(out.read_text())
    return {
        "problem": summary["problem"],
        "direct_wall_s": round(time.monotonic() - started, 1),
        "direct_baselines_cached": sum(s["baseline_cached"] for s in direct["shapes"]),
        "same_verdict": stored["verdict"] == direct["verdict"],
        "same_correctness": _correctness(stored) == _correctness(direct),
        "same_shapes": _shape_ids(stored) == _shape_ids(direct),
        "score_stored": stored.get("score"),
        "score_direct": direct.get("score"),
        "score_rel_diff": _rel_diff(stored.get("score"), direct.get("score")),
        "shape_median_rel_diffs": [
            _rel_diff(_median(a), _median(b))
            for a, b in zip(stored["shapes"], direct["shapes"], strict=False)
        ],
        "direct_total_s": direct.get("cost", {}).get("total_s"),
    }


def _correctness(result: dict) -> tuple:
    shapes = tuple((s["set"], s["index"], s["correct"]) for s in result["shapes"])
    return result["correct_visible"], result["correct_hidden"], shapes


def _shape_ids(result: dict) -> list:
    return [(s["set"], s["index"], s["params"], s["baseline_key"]) for s in result["shapes"]]


def _median(shape: dict):
    return (shape.get("time") or {}).get("median_us")


def _rel_diff(a, b):
    if not a or b is None:
        return None
    return round(abs(a - b) / abs(a), 4)


def _headline(report: dict) -> dict:
    headline = {"hardware": report["hardware"], "first_per_hour": report["first"]["per_hour"]}
    headline["first"] = [
        (e["problem"], e["verdict"], e["wall_s"], e["baselines_s"])
        for e in report["first"]["evaluations"]
    ]
    if "regrade" in report:
        headline["regrade_per_hour"] = report["regrade"]["per_hour"]
        headline["regrade"] = [
            (e["problem"], e["verdict"], e["wall_s"], e["baselines_s"])
            for e in report["regrade"]["evaluations"]
        ]
    headline["direct"] = report["direct"]
    return headline


if __name__ == "__main__":
    raise SystemExit(main())
