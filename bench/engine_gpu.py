"""GPU measurements of the evaluation engine, for docs/benchmarks.md ("Engine (H100)").

    python bench/engine_gpu.py grade --out DIR     # each honest solution; softmax twice (warm)
    python bench/engine_gpu.py repro --problem softmax --runs 5 --out DIR   # 5 fresh grades
    python bench/engine_gpu.py accuracy --problem softmax --grade DIR/softmax.json --out DIR
    python bench/engine_gpu.py accuracy --problem softmax --variants --out DIR   # attribution

The experiments that led to the timing protocol (an idle gap before small shapes, input
placement, the hold kernel, the SM clock, settling after idle gaps, per-process levels, a dirty
or clean L2 flush) are summarized in docs/benchmarks.md ("History"); their code left the tree.

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
                "round_medians_us": (s.get("time") or {}).get("round_medians_us"),
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
    runs = []
    if args.baselines and not args.baselines.is_file():
        raise SystemExit(f"--baselines {args.baselines}: no such file")
    if args.baselines:  # an earlier grade's result: every run uses its cached baselines
        baseline = args.baselines
    else:
        baseline = args.out / f"{args.problem}_repro_base.json"
        runs.append(_digest(grade(args.problem, solution, baseline)))
    report = {"problem": args.problem, "runs": runs}
    for run in range(1, args.runs + 1 - len(runs)):
        record = grade(args.problem, solution, args.out / f"repro_{run}.json", baselines=baseline)
        report["runs"].append(_digest(record))
        report["shapes"] = _spread(report["runs"])
        # written after every grade so a run cut short still leaves its figures
        (args.out / "engine_repro.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def _spread(runs: list[dict]) -> dict:
    """Per shape: the grades' reported times and their CV, and the CV the median of the round
    medians (timing protocol 3's statistic) would have had over the same grades."""
    medians: dict[str, list[float]] = {}
    of_rounds: dict[str, list[float]] = {}
    for run in runs:
        for shape in run["shapes"]:
            key = f"{shape['set']}{shape['index']}"
            medians.setdefault(key, []).append(shape["median_us"])
            if shape.get("round_medians_us"):
                of_rounds.setdefault(key, []).append(statistics.median(shape["round_medians_us"]))
    return {
        key: {"median_us": statistics.median(v), "cv_pct": _cv(v), "runs": v}
        | ({"median_of_rounds_cv_pct": _cv(of_rounds[key])} if key in of_rounds else {})
        for key, v in medians.items()
    }


def _cv(values: list[float]) -> float:
    return 100 * statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0


def command_accuracy(args: argparse.Namespace) -> dict:
    """do_bench against a grade's medians, shape by shape. With `--inputs grade` (the default)
    do_bench times each of the grade's own inputs (the shape's seeds and distributions, as the
    reference process builds them) and reports the median of their medians: a grade's rounds
    rotate through the same inputs and take medians, so where the inputs differ widely in cost
    the grade reads the middle one. `--variants` then times the middle input. With `--inputs
    seeds` it times seed 0's normal input alone, as every do_bench table of docs/benchmarks.md
    does but "paged_attention on the grade's own inputs"."""
    import torch
    import triton.testing

    from runners.oracle import grade_inputs
    from runners.plan import plan_shapes
    from runners.problem import load_problem

    problem = load_problem(args.problem)
    graded = {}
    if args.grade:
        shapes_ = json.loads(args.grade.read_text())["shapes"]
        graded = {f"{s['set']}{s['index']}": s for s in shapes_}
    reference = _import(problem.path / "reference.py", "reference")
    solution = _import(SOLUTIONS / args.problem / "honest.py", "solution")
    rows = {}
    visible, hidden = plan_shapes(problem, "cuda")
    for plan in visible + hidden:
        for name, value in plan.params.items():
            setattr(reference, name, value)
        torch.manual_seed(0)
        ref_model = reference.Model(*reference.get_init_inputs())
        model = solution.ModelNew(*reference.get_init_inputs())
        model.load_state_dict(ref_model.state_dict())
        model = model.cuda().eval()
        if args.inputs == "grade":
            pairs = zip(plan.seeds, plan.dists, strict=True)
            bases = [grade_inputs(reference, s, d, "cuda", problem.cases) for s, d in pairs]
            timed = bases
        else:
            bases = _seed_inputs(reference)
            timed = bases[:1]
        with torch.no_grad():
            each = [
                triton.testing.do_bench(
                    lambda m=model, a=a: m(*a), warmup=100, rep=500, return_mode="median"
                )
                * 1e3
                for a in timed
            ]
            row = {"do_bench_us": statistics.median(each), "do_bench_us_each": each}
            if args.variants:
                middle = sorted(range(len(each)), key=each.__getitem__)[len(each) // 2]
                bases = [bases[middle], *bases[:middle], *bases[middle + 1 :]]
                row |= _variants(model, bases)
        if plan.id in graded:
            ours = graded[plan.id]["time"]["median_us"]
            row |= {"engine_us": ours, "diff_pct": 100 * (ours / row["do_bench_us"] - 1)}
        rows[plan.id] = row
        shown = {k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}
        shown["do_bench_us_each"] = [round(v, 2) for v in each]
        print(plan.id, shown, flush=True)
        del model, ref_model, bases, timed
        torch.cuda.empty_cache()
    return {"problem": args.problem, "inputs": args.inputs, "shapes": rows}


def _variants(model, bases) -> dict:
    """The same callable timed several ways, to attribute a difference from do_bench.

    burst_*: do_bench's own loop (flush, start, call, end; one synchronize at the end, so the
    GPU never idles). sync_*: the same with a synchronize after every call (the GPU idles while
    the host prepares the next one, as in the engine). *_zero_i32: do_bench's flush buffer
    (256e6 bytes of int32) instead of the engine's 256 MiB of uint8. engine_*: runners.timing
    itself, with one input reused or the 3 inputs rotated (fresh clones each call).
    """
    import torch

    from runners import timing

    flush_u8 = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    flush_i32 = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")
    args = bases[0]

    def loop(flush, n: int, sync_each: bool) -> float:
        events = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(n)
        ]
        for _ in range(20):
            flush.zero_()
            model(*args)
        torch.cuda.synchronize()
        for start, end in events:
            flush.zero_()
            start.record()
            model(*args)
            end.record()
            if sync_each:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in events) * 1e3

    def engine(bases_) -> float:
        settings = timing.Settings(flush_bytes=256 * 2**20)
        samples = timing.measure(lambda a: model(*a), bases_, device="cuda", settings=settings)
        return statistics.median(samples.event_ms) * 1e3

    out = {
        "burst_zero_i32_us": loop(flush_i32, 300, sync_each=False),
        "burst_zero_u8_us": loop(flush_u8, 300, sync_each=False),
        "sync_zero_i32_us": loop(flush_i32, 300, sync_each=True),
        "sync_zero_u8_us": loop(flush_u8, 300, sync_each=True),
        "engine_one_input_us": engine([args]),
        "engine_rotated_us": engine(bases),
        "sm_clock_mhz": _sm_clock(),
    }
    del flush_u8, flush_i32
    return out


def _sm_clock() -> float | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:  # a diagnostic only
        return None


def _seed_inputs(reference) -> list[list]:
    """Seeds 0-2 of the reference's `get_inputs()` on CUDA, normal values (not a grade's inputs:
    `runners.oracle.grade_inputs` builds those)."""
    import torch

    bases = []
    for seed in range(3):
        torch.manual_seed(seed)
        bases.append(
            [a.cuda() if isinstance(a, torch.Tensor) else a for a in reference.get_inputs()]
        )
    return bases


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
    repro.add_argument("--baselines", type=Path, help="an earlier grade's JSON to take them from")
    repro.set_defaults(handler=command_repro)
    accuracy = commands.add_parser("accuracy")
    accuracy.add_argument("--problem", default="softmax")
    accuracy.add_argument("--grade", type=Path, help="a grade's JSON, to compare its medians")
    accuracy.add_argument("--variants", action="store_true", help="time each shape 6 more ways")
    accuracy.add_argument(
        "--inputs",
        choices=("grade", "seeds"),
        default="grade",
        help="the grade's own inputs (default), or seed 0's normal input as before",
    )
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
