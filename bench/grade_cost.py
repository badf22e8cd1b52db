"""Where a grade's seconds go: a first grade and re-grades of each solution, phase by phase.

    python bench/grade_cost.py --out $OUT/cost --regrades 5          # the five honest controls
    python bench/grade_cost.py --out $OUT/cost \\
        --grade var/kbh/kbh_fp8_gemm=var/peer/public/runs/h100/RUN_solution.py.txt
    python bench/grade_cost.py --device cpu --out /tmp/cost \\
        --grade tests/runners/problems/tiny_tanh=tests/runners/solutions/runtime/honest.py

Each grade is ``python -m runners evaluate`` in a fresh process, as a worker runs it, with
OUT/cache/<solution> as the worker's disk cache (``KERNEL_ARENA_CACHE``). The first grade starts
from an empty cache and no baselines: it computes the reference's inputs and outputs and times
the reference. Each re-grade is given the first grade's result as its cached baselines
(``--baselines``) and finds the disk cache the first grade left, as a warm worker does.
Printed per grade: wall time, verdict and the engine's own phase split (the result's ``cost``:
reference inputs and outputs, the starter's check (what the grade waited for it once the
held-out gate ran: it runs beside the correctness gates), build, correctness on visible and
held-out shapes, performance, baselines, score); with ``--regrades`` 2 or more, each
solution's worst shape spread across its re-grades against the precision targets. The engine's
progress log of each grade lands beside its result (``.log``). Written to OUT/grade_cost.json
after every grade; a grade already there is not run again, so a second call (a device call's
deadline) goes on;
``--until EPOCH`` starts no grade that would end after it. ``--time-cap S`` grades a copy of
each problem with ``time_cap_s: S`` (under OUT/problems), to see what a shorter sampling budget
costs in precision.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runners.schema import GATE_NAMES  # noqa: E402  (the engine, no torch needed)

SOLUTIONS = ROOT / "tests" / "runners" / "solutions"
CONTROLS = ("softmax", "rmsnorm", "fp8_gemm", "paged_attention", "moe_swiglu")
# The result's `cost` keys: the reference's inputs and outputs, the starter's held-out check,
# each gate, and the baselines (timed within the score gate).
PHASES = ("reference_s", "starter_check_s", *(f"{gate}_s" for gate in GATE_NAMES), "baselines_s")
# The precision a re-grade keeps (docs/benchmarks.md): CV across fresh grades of at most 0.5 %
# from 50 us, 1.5 % from 5 us; shorter shapes count for correctness only.
TARGETS = ((50.0, 0.5), (5.0, 1.5))


def main() -> None:
    args = _parse()
    args.out.mkdir(parents=True, exist_ok=True)
    report_path = args.out / "grade_cost.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    grades = args.grade or [f"{slug}={SOLUTIONS / slug / 'honest.py'}" for slug in CONTROLS]
    for spec in grades:
        problem, solution = _spec(spec)
        name = f"{Path(problem).name}:{Path(solution).name}"
        if args.time_cap is not None:
            problem = str(with_time_cap(problem, args.time_cap, args.out / "problems"))
            name += f" (time cap {args.time_cap:g} s)"
        entry = report.setdefault(name, {"problem": problem, "solution": str(solution)})
        # The worker's disk cache (reference outputs, compiled baselines): empty for the first
        # grade, as the first grade of a problem on a new worker finds it, then kept.
        cache = args.out / "cache" / _safe(name)
        first = args.out / f"{_safe(name)}.first.json"
        if "first" not in entry:
            shutil.rmtree(cache, ignore_errors=True)
        regrades = entry.setdefault("regrades", [])
        kinds = [("first", None)] * ("first" not in entry)
        kinds += [(f"regrade{n}", first) for n in range(len(regrades) + 1, args.regrades + 1)]
        for kind, baselines in kinds:
            if kind != "first" and "first" not in entry:
                break  # a re-grade takes the first grade's baselines
            expected_s = _expected_s(entry, kind, args.grade_s)
            if args.until and time.time() + expected_s > args.until:
                print(f"{name} {kind}: not started, would end past --until", flush=True)
                continue
            out = args.out / f"{_safe(name)}.{kind}.json"
            record = grade(
                problem, solution, out, device=args.device, baselines=baselines, cache=cache
            )
            if kind == "first":
                entry["first"] = record
            else:
                regrades.append(record)
                entry["spread"] = spread(regrades)
            report_path.write_text(json.dumps(report, indent=2) + "\n")
            print(_line(name, kind, record), flush=True)
    report_path.write_text(json.dumps(report, indent=2) + "\n")  # also what did not start
    print(table(report))


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--grade",
        action="append",
        help="PROBLEM=SOLUTION: a problem slug or folder and a solution file or folder "
        "(default: the honest controls of softmax, rmsnorm, fp8_gemm, paged_attention, "
        "moe_swiglu)",
    )
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument(
        "--regrades",
        type=int,
        default=1,
        help="re-grades of each solution after its first grade, each in a fresh process with "
        "the first's baselines and the warm disk cache; from 2 on, the report has each shape's "
        "spread across them (default 1)",
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--time-cap",
        type=float,
        help="grade a copy of each problem with this `time_cap_s` (seconds of samples per shape, "
        "shared by its rounds; the engine's default is 2): its own version, so its own first "
        "grade, and its own entries in the report",
    )
    parser.add_argument(
        "--until",
        type=float,
        help="a Unix time: no grade starts that would end after it (judged by the solution's "
        "longest grade of its kind so far, else --grade-s), so a device call's limit cuts no "
        "grade in the middle",
    )
    parser.add_argument(
        "--grade-s",
        type=float,
        default=240.0,
        help="with --until, the seconds a solution's first grade is expected to take before "
        "any of its grades has ended (default 240)",
    )
    args = parser.parse_args()
    if args.time_cap is not None and args.time_cap <= 0:
        parser.error(f"--time-cap {args.time_cap:g}: expected a positive number of seconds")
    return args


def with_time_cap(problem: str, seconds: float, under: Path) -> Path:
    """A copy of `problem` (slug or folder) under `under` whose problem.yaml sets `time_cap_s`
    (in a folder of the cap's name: the copy keeps the slug its folder must be named by)."""
    from runners.problem import load_problem  # the engine's problem reader (PyYAML)

    source = load_problem(problem).path
    copy = under / f"cap{seconds:g}" / source.name
    shutil.rmtree(copy, ignore_errors=True)  # made again: the source may have changed since
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    spec = yaml.safe_load((copy / "problem.yaml").read_text())
    spec["time_cap_s"] = seconds
    (copy / "problem.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return copy


def _expected_s(entry: dict, kind: str, default_s: float) -> float:
    """How long a grade of `kind` of this solution should take: its longest re-grade so far
    for a re-grade (else its first grade, which also times the baselines), `default_s` for a
    first grade."""
    if kind == "first":
        return default_s
    walls = [record["wall_s"] for record in entry.get("regrades", [])]
    first = entry.get("first") or {}
    return max(walls) if walls else first.get("wall_s", default_s)


def _spec(spec: str) -> tuple[str, Path]:
    problem, separator, solution = spec.partition("=")
    if not separator or not problem or not solution:
        raise SystemExit(f"--grade {spec!r}: expected PROBLEM=SOLUTION")
    path = Path(solution)
    if not path.exists():
        raise SystemExit(f"--grade {spec!r}: no such solution {path}")
    return problem, path


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def grade(
    problem: str, solution: Path, out: Path, *, device: str, baselines: Path | None, cache: Path
) -> dict:
    """One grade in a fresh process with `cache` as the worker's disk cache: its wall time,
    verdict, score, the engine's phases and each timed shape's reported time."""
    with tempfile.TemporaryDirectory(prefix="grade-cost-") as scratch:
        if solution.is_file() and solution.suffix != ".py":  # a published file: solution.py.txt
            shutil.copy(solution, Path(scratch) / "solution.py")
            solution = Path(scratch) / "solution.py"
        command = [sys.executable, "-m", "runners", "evaluate", "--problem", problem]
        command += ["--solution", str(solution), "--device", device, "--json", str(out)]
        command += ["--baselines", str(baselines)] if baselines else []
        command += ["--progress", "detail"]
        env = {**os.environ, "KERNEL_ARENA_CACHE": str(cache)}
        started = time.perf_counter()
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
        wall_s = time.perf_counter() - started
    out.with_suffix(".log").write_text(done.stderr)  # the engine's own account, request by request
    if not out.exists():
        return {"wall_s": round(wall_s, 2), "exit": done.returncode, "error": done.stderr[-2000:]}
    result = json.loads(out.read_text())
    return {
        "wall_s": round(wall_s, 2),
        "exit": done.returncode,
        "verdict": result.get("verdict"),
        "score": result.get("score"),
        "cost": {phase: (result.get("cost") or {}).get(phase) for phase in (*PHASES, "total_s")},
        "shapes": {
            f"{shape['set']}{shape['index']}": shape["time"]["median_us"]
            for shape in result.get("shapes", [])
            if shape.get("time")
        },
    }


def spread(records: list[dict]) -> dict:
    """Across re-grades (two or more): each shape's CV of its reported time against the
    precision target for its size (`TARGETS`), and the score's CV."""
    if len(records) < 2 or any("shapes" not in record for record in records):
        return {}
    shapes = {}
    for shape in records[0]["shapes"]:
        times = [record["shapes"].get(shape) for record in records]
        if None in times:
            continue
        median = statistics.median(times)
        target = next((pct for floor, pct in TARGETS if median >= floor), None)
        cv = _cv(times)
        shapes[shape] = {
            "median_us": round(median, 3),
            "cv_pct": round(cv, 3),
            "target_pct": target,
            "within": None if target is None else cv <= target,
        }
    scores = [record["score"] for record in records if record.get("score") is not None]
    return {
        "grades": len(records),
        "shapes": shapes,
        "score_cv_pct": round(_cv(scores), 3) if len(scores) > 1 else None,
        "all_within": all(s["within"] is not False for s in shapes.values()),
    }


def _cv(values: list[float]) -> float:
    mean = statistics.fmean(values)
    return 100 * statistics.stdev(values) / mean if mean else 0.0


def _line(name: str, kind: str, record: dict) -> str:
    if "error" in record:
        return f"{name} {kind}: no result (exit {record['exit']}): {record['error'][-300:]}"
    return f"{name} {kind}: {record['wall_s']:.1f} s, {record['verdict']}"


def table(report: dict) -> str:
    """One line per grade: wall time and each phase, in seconds; then, per solution graded
    again at least twice, its worst shape's spread against its target."""
    header = ["grade", "wall", *(phase.removesuffix("_s") for phase in PHASES)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    spreads = []
    for name, entry in report.items():
        records = [("first", entry.get("first"))]
        records += [(f"regrade{n}", r) for n, r in enumerate(entry.get("regrades", []), 1)]
        for kind, record in records:
            if not record or "cost" not in record:
                continue
            cost = record["cost"]
            cells = [f"{name} {kind} ({record['verdict']})", f"{record['wall_s']:.1f}"]
            cells += ["-" if cost.get(p) is None else f"{cost[p]:.1f}" for p in PHASES]
            lines.append("| " + " | ".join(cells) + " |")
        if entry.get("spread", {}).get("shapes"):
            spreads.append(_spread_line(name, entry["spread"]))
    return "\n".join(lines + spreads)


def _spread_line(name: str, spread: dict) -> str:
    worst = {}
    for shape in spread["shapes"].values():
        target = shape["target_pct"]
        if target is not None and shape["cv_pct"] > worst.get(target, -1.0):
            worst[target] = shape["cv_pct"]
    parts = [f"worst {cv:.2f} % (target {target} %)" for target, cv in sorted(worst.items())]
    verdict = "within" if spread["all_within"] else "OUTSIDE"
    score = spread["score_cv_pct"]
    score_text = "" if score is None else f"; score CV {score:.2f} %"
    return f"{name}: {spread['grades']} re-grades, {verdict}: {', '.join(parts)}{score_text}"


if __name__ == "__main__":
    main()
