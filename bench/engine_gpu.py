"""GPU measurements of the evaluation engine, for docs/benchmarks.md ("Engine (H100)").

    python bench/engine_gpu.py grade --out DIR     # each honest solution; softmax twice (warm)
    python bench/engine_gpu.py repro --problem softmax --runs 5 --out DIR   # 5 fresh grades
    python bench/engine_gpu.py accuracy --problem softmax --grade DIR/softmax.json --out DIR

Every grade runs `python -m runners evaluate` in a fresh process, as a worker would.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SOLUTIONS = ROOT / "tests" / "runners" / "solutions"
PROBLEMS = ("rmsnorm", "softmax", "row_sum")


def grade(problem: str, solution: Path, out: Path, baselines: Path | None = None) -> dict:
    command = [
        sys.executable,
        "-m",
        "runners",
        "evaluate",
        "--problem",
        problem,
        "--solution",
        str(solution),
        "--device",
        "cuda",
        "--json",
        str(out),
    ]
    if baselines:
        command += ["--baselines", str(baselines)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    print(done.stdout, done.stderr[-3000:], sep="\n", flush=True)
    result = json.loads(out.read_text()) if out.exists() else {}
    return {"wall_s": round(wall, 2), "exit": done.returncode, "result": result}


def _digest(record: dict) -> dict:
    result = record["result"]
    return {
        "wall_s": record["wall_s"],
        "verdict": result.get("verdict"),
        "reason": result.get("reason"),
        "score": result.get("score"),
        "hidden_score": result.get("hidden_score"),
        "cost": result.get("cost"),
        "shapes": [
            {
                k: s.get(k)
                for k in (
                    "set",
                    "index",
                    "params",
                    "peak_fraction",
                    "gbps",
                    "speedup_eager",
                    "speedup_compile",
                )
            }
            | {
                "median_us": (s.get("time") or {}).get("median_us"),
                "n": (s.get("time") or {}).get("n"),
                "eager_us": (s.get("baseline_eager") or {}).get("median_us"),
                "compile_us": (s.get("baseline_compile") or {}).get("median_us"),
            }
            for s in result.get("shapes", [])
        ],
    }


def command_grade(args: argparse.Namespace) -> dict:
    report = {}
    for problem in args.problems:
        solution = SOLUTIONS / problem / "honest.py"
        first = grade(problem, solution, args.out / f"{problem}.json")
        report[problem] = {"first": _digest(first)}
        if problem in args.warm:
            warm = grade(problem, solution, args.out / f"{problem}_warm.json")
            report[problem]["warm"] = _digest(warm)
    return report


def command_repro(args: argparse.Namespace) -> dict:
    solution = SOLUTIONS / args.problem / "honest.py"
    baseline = args.out / f"{args.problem}_repro_base.json"
    report = {"problem": args.problem, "runs": [_digest(grade(args.problem, solution, baseline))]}
    for run in range(1, args.runs):
        record = grade(args.problem, solution, args.out / f"repro_{run}.json", baselines=baseline)
        report["runs"].append(_digest(record))
        report["shapes"] = _spread(report["runs"])
        # written after every grade so a run cut short still leaves its figures
        (args.out / "engine_repro.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def _spread(runs: list[dict]) -> dict:
    medians: dict[str, list[float]] = {}
    for run in runs:
        for shape in run["shapes"]:
            medians.setdefault(f"{shape['set']}{shape['index']}", []).append(shape["median_us"])
    return {
        key: {"median_us": statistics.median(v), "cv_pct": _cv(v), "runs": v}
        for key, v in medians.items()
    }


def _cv(values: list[float]) -> float:
    return 100 * statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0


def command_accuracy(args: argparse.Namespace) -> dict:
    import torch
    import triton.testing

    from runners.problem import load_problem

    problem = load_problem(args.problem)
    graded = {f"{s['set']}{s['index']}": s for s in json.loads(args.grade.read_text())["shapes"]}
    reference = _import(problem.path / "reference.py", "reference")
    solution = _import(SOLUTIONS / args.problem / "honest.py", "solution")
    rows = {}
    shapes = [("visible", i, p) for i, p in enumerate(problem.visible)]
    shapes += [("hidden", i, p) for i, p in enumerate(problem.hidden)]
    for set_name, index, params in shapes:
        for name, value in params.items():
            setattr(reference, name, value)
        torch.manual_seed(0)
        ref_model = reference.Model(*reference.get_init_inputs())
        model = solution.ModelNew(*reference.get_init_inputs())
        model.load_state_dict(ref_model.state_dict())
        model = model.cuda().eval()
        args_ = [a.cuda() if isinstance(a, torch.Tensor) else a for a in reference.get_inputs()]
        with torch.no_grad():
            ms = triton.testing.do_bench(
                lambda m=model, a=args_: m(*a), warmup=100, rep=500, return_mode="median"
            )
        ours = graded[f"{set_name}{index}"]["time"]["median_us"]
        rows[f"{set_name}{index}"] = {
            "do_bench_us": ms * 1e3,
            "engine_us": ours,
            "diff_pct": 100 * (ours - ms * 1e3) / (ms * 1e3),
        }
    return {"problem": args.problem, "shapes": rows}


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    grade_cmd = commands.add_parser("grade")
    grade_cmd.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    grade_cmd.add_argument("--warm", nargs="*", default=["softmax"], help="grade these twice")
    grade_cmd.set_defaults(handler=command_grade)
    repro = commands.add_parser("repro")
    repro.add_argument("--problem", default="softmax")
    repro.add_argument("--runs", type=int, default=5)
    repro.set_defaults(handler=command_repro)
    accuracy = commands.add_parser("accuracy")
    accuracy.add_argument("--problem", default="softmax")
    accuracy.add_argument("--grade", type=Path, required=True)
    accuracy.set_defaults(handler=command_accuracy)
    for sub in (grade_cmd, repro, accuracy):
        sub.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report = args.handler(args)
    target = args.out / f"engine_{args.command}.json"
    target.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=1)[:6000])


if __name__ == "__main__":
    main()
