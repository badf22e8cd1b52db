"""Where a grade's seconds go: a first grade and a re-grade of each solution, phase by phase.

    python bench/grade_cost.py --out $OUT/cost                       # the five honest controls
    python bench/grade_cost.py --out $OUT/cost \\
        --grade var/kbh/kbh_fp8_gemm=var/peer/public/runs/h100/RUN_solution.py.txt
    python bench/grade_cost.py --device cpu --out /tmp/cost \\
        --grade tests/runners/problems/tiny_tanh=tests/runners/solutions/runtime/honest.py

Each grade is ``python -m runners evaluate`` in a fresh process, as a worker runs it. The first
grade measures everything (reference outputs, the reference's timings); the re-grade is given
the first grade's result as its cached baselines (``--baselines``), as a worker with a warm
cache is. Printed per grade: wall time, verdict and the engine's own phase split (the result's
``cost``: reference inputs and outputs, build, correctness on visible and held-out shapes,
performance, baselines, score). Written to OUT/grade_cost.json after every grade; a grade
already there is not run again, so a second call (a device call's deadline) goes on.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runners.schema import GATE_NAMES  # noqa: E402  (the engine, no torch needed)

SOLUTIONS = ROOT / "tests" / "runners" / "solutions"
CONTROLS = ("softmax", "rmsnorm", "fp8_gemm", "paged_attention", "moe_swiglu")
# The result's `cost` keys: the reference's inputs and outputs, the starter's held-out check,
# each gate, and the baselines (timed within the score gate).
PHASES = ("reference_s", "starter_check_s", *(f"{gate}_s" for gate in GATE_NAMES), "baselines_s")


def main() -> None:
    args = _parse()
    args.out.mkdir(parents=True, exist_ok=True)
    report_path = args.out / "grade_cost.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    grades = args.grade or [f"{slug}={SOLUTIONS / slug / 'honest.py'}" for slug in CONTROLS]
    for spec in grades:
        problem, solution = _spec(spec)
        name = f"{Path(problem).name}:{Path(solution).name}"
        entry = report.setdefault(name, {"problem": problem, "solution": str(solution)})
        first = args.out / f"{_safe(name)}.first.json"
        for kind, baselines in (("first", None), ("regrade", first)):
            if kind in entry:
                continue
            out = args.out / f"{_safe(name)}.{kind}.json"
            entry[kind] = grade(problem, solution, out, device=args.device, baselines=baselines)
            report_path.write_text(json.dumps(report, indent=2) + "\n")
            print(_line(name, kind, entry[kind]), flush=True)
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
    parser.add_argument("--out", type=Path, required=True)
    return parser.parse_args()


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


def grade(problem: str, solution: Path, out: Path, *, device: str, baselines: Path | None):
    """One grade in a fresh process: its wall time, verdict, score and the engine's phases."""
    with tempfile.TemporaryDirectory(prefix="grade-cost-") as scratch:
        if solution.is_file() and solution.suffix != ".py":  # a published file: solution.py.txt
            shutil.copy(solution, Path(scratch) / "solution.py")
            solution = Path(scratch) / "solution.py"
        command = [sys.executable, "-m", "runners", "evaluate", "--problem", problem]
        command += ["--solution", str(solution), "--device", device, "--json", str(out)]
        command += ["--baselines", str(baselines)] if baselines else []
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        wall_s = time.perf_counter() - started
    if not out.exists():
        return {"wall_s": round(wall_s, 2), "exit": done.returncode, "error": done.stderr[-2000:]}
    result = json.loads(out.read_text())
    return {
        "wall_s": round(wall_s, 2),
        "exit": done.returncode,
        "verdict": result.get("verdict"),
        "score": result.get("score"),
        "cost": {phase: (result.get("cost") or {}).get(phase) for phase in (*PHASES, "total_s")},
    }


def _line(name: str, kind: str, record: dict) -> str:
    if "error" in record:
        return f"{name} {kind}: no result (exit {record['exit']}): {record['error'][-300:]}"
    return f"{name} {kind}: {record['wall_s']:.1f} s, {record['verdict']}"


def table(report: dict) -> str:
    """One line per grade: wall time and each phase, in seconds."""
    header = ["grade", "wall", *(phase.removesuffix("_s") for phase in PHASES)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, entry in report.items():
        for kind in ("first", "regrade"):
            record = entry.get(kind)
            if not record or "cost" not in record:
                continue
            cost = record["cost"]
            cells = [f"{name} {kind} ({record['verdict']})", f"{record['wall_s']:.1f}"]
            cells += ["-" if cost.get(p) is None else f"{cost[p]:.1f}" for p in PHASES]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
