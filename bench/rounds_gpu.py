"""Which per-shape statistic reproduces across fresh grades: rounds, and what each round reports.

    python bench/rounds_gpu.py collect --problem fp8_gemm --runs 5 --rounds 6 --full --out DIR
    python bench/rounds_gpu.py analyze DIR/rounds_fp8_gemm.json [OTHER/rounds_fp8_gemm.json ...]
    python bench/rounds_gpu.py parts --procs 12 --out DIR    # a per-process offset, by part
    python bench/rounds_gpu.py parts --procs 5 --passes 6 --fresh-stream --out DIR

`collect` runs `--runs` full grades of the honest solution, each in a fresh process as a worker
would (`python -m runners evaluate`, through `grade-one` below), with the engine's performance
gate timing every shape in `--rounds` rounds (by default the engine's own); it keeps every
round's raw samples, the seconds the round took (`wall_s`) and of those the re-check of its timed
outputs (`recheck_s`, of which the reference process's own `expect_s`: since the reference
compares them itself, its reading of the candidate's file, the reference's calls and the
comparison), and the first grade's EvaluationResult (for `engine_gpu.py accuracy`).
With `--full` a round samples for its whole share of the time cap instead of stopping once its
mean is precise (`Settings.rse_target` 0), so `analyze` can also emulate the early stop on a
prefix.
With `--until EPOCH` no grade starts that would end after that time (judged by the longest grade
so far, or before any has ended by `--grade-s`, an estimate), so a device call's limit cuts no
grade in the middle.
With `--no-baselines` the reference is not timed (the eager, compile and library lines stay
empty): only speedup-regime problems score by them, and they cost minutes per problem.
`--busy-gap S` grades with `runners.performance.COMPUTE_BUSY_GAP_S` set to S: the warm-up a
compute-bound shape timed right after another takes (collect two reports, one per value, on
the same GPU, alternating, to see what the shorter warm-up does to the reported times).

`analyze` then reports, per shape, the CV across the grades (of several reports of one problem,
pooled) of each candidate statistic: the first k rounds (k from 3 up), each round reduced by its
median over the early-stopped prefix (what the engine does), its median over all samples, or the
mean of its middle half; rounds combined as `runners.scoring.round_center` does. A shape's
rounds counts per grade are listed: more where its rounds disagreed (`scoring.unsettled`); and
the median seconds of its rounds, of their re-checks and of the reference's part of those.

`parts` times causal_attention's honest call and three of its parts in fresh processes, to find
where a level that differs between processes but not within one lives; `--empty-cache` releases
the allocator's memory before each pass, `--fresh-stream` runs each pass on a new CUDA stream.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SOLUTIONS = ROOT / "tests" / "runners" / "solutions"


def command_collect(args: argparse.Namespace) -> dict:
    solution = SOLUTIONS / args.problem / "honest.py"
    report: dict = {"problem": args.problem, "rounds": args.rounds, "full": args.full, "runs": []}
    target = args.out / f"rounds_{args.problem}.json"
    longest = args.grade_s
    for run in range(args.runs):
        if args.until and time.time() + longest > args.until:
            print(f"stopped after {run} grades: another would end past --until", flush=True)
            break
        raw = args.out / f"raw_{args.problem}_{run}.json"
        command = [sys.executable, __file__, "grade-one", "--problem", args.problem]
        command += ["--solution", str(solution), "--raw", str(raw)]
        command += ["--rounds", str(args.rounds)] * bool(args.rounds)
        command += ["--full"] * args.full + ["--no-baselines"] * args.no_baselines
        command += ["--busy-gap", str(args.busy_gap)] * (args.busy_gap is not None)
        command += ["--keep-result"] * (run == 0)  # kept even if a later grade is cut
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        print(done.stdout[-1500:], done.stderr[-3000:], sep="\n", flush=True)
        if not raw.exists():
            report["runs"].append({"exit": done.returncode, "error": done.stderr[-2000:]})
            continue
        record = json.loads(raw.read_text())
        record["wall_s"] = round(time.perf_counter() - started, 1)
        longest = max(longest, record["wall_s"])
        raw.unlink()  # one file per problem comes back from the device: the report
        report["runs"].append(record)
        target.write_text(json.dumps(report) + "\n")  # after each grade: a cut run keeps its data
    return analyze(report)


def command_grade_one(args: argparse.Namespace) -> None:
    """One grade, instrumented from outside the engine: the rounds, the early stop and the
    baselines set as asked, and each round's samples written to `--raw`."""
    from runners import cli, gates, performance

    if args.rounds:
        performance.Performance._rounds = lambda self: args.rounds
    rounds: dict[str, list[dict]] = {}
    ask_timing = performance.Performance._ask_timing
    settle = performance.Performance._settle
    settings_of = performance.Performance._settings

    recheck_timed = gates.Grading.recheck_timed
    ask_reference = gates.Grading.ask_reference
    parts: dict[str, float] = {}
    # per shape: when its timing began, its wall, the idle gap before it and its warm-up
    asked_at: dict[str, tuple] = {}

    def rechecked(self, plan, reply, out, seed):
        started = time.perf_counter()
        try:
            return recheck_timed(self, plan, reply, out, seed)
        finally:
            parts["recheck_s"] = time.perf_counter() - started

    def asked(self, message, timeout_s):
        reply = ask_reference(self, message, timeout_s)
        if message.get("op") == "recheck":
            parts["expect_s"] = float(reply.get("seconds") or 0.0)
        return reply

    def timing(self, plan, settings, gate):
        started = time.perf_counter()
        answer = ask_timing(self, plan, settings, gate)
        idle, warmup = (answer[0].get(key) for key in ("idle_before_s", "warmup_took_s"))
        asked_at[plan.id] = (started, time.perf_counter() - started, idle, warmup)
        return answer

    def settled(self, plan, reply, settings, samples, gate):
        parts.clear()
        before = len(samples)
        problems = settle(self, plan, reply, settings, samples, gate)
        if len(samples) > before:
            started, wall_s, idle_s, warmup_s = asked_at[plan.id]
            entry = {
                "at_s": round(started - began, 3),
                "wall_s": round(wall_s, 3),
                "idle_before_s": idle_s,
                "warmup_s": warmup_s,
                **{name: round(value, 3) for name, value in parts.items()},
            }
            rounds.setdefault(plan.id, []).append(entry | {"us": [v * 1e3 for v in samples[-1]]})
        return problems

    def full_settings(self):
        settings = settings_of(self)
        settings.rse_target = 0.0
        return settings

    performance.Performance._ask_timing = timing
    performance.Performance._settle = settled
    gates.Grading.recheck_timed = rechecked
    gates.Grading.ask_reference = asked
    if args.full:
        performance.Performance._settings = full_settings
    if args.no_baselines:
        performance.Performance._baselines = lambda self: []
    if args.busy_gap is not None:
        performance.COMPUTE_BUSY_GAP_S = args.busy_gap
    began = time.perf_counter()
    result_path = args.raw.with_suffix(".result.json")
    argv = ["evaluate", "--problem", args.problem, "--solution", str(args.solution)]
    cli.main([*argv, "--device", args.device, "--json", str(result_path)])
    result = json.loads(result_path.read_text())
    if not args.keep_result:
        result_path.unlink()
    performance_gate = next(
        (g["details"] for g in result["gates"] if g["name"] == "performance"), {}
    )
    record = {
        "verdict": result["verdict"],
        "reason": result["reason"],
        "score": result.get("score"),
        "cost": result.get("cost"),
        "clocks": (result.get("environment") or {}).get("clocks"),
        "process_starts_s": performance_gate.get("process_starts_s"),
        "more_rounds": performance_gate.get("more_rounds"),
        "reported_us": {
            f"{s['set']}{s['index']}": (s.get("time") or {}).get("median_us")
            for s in result["shapes"]
        },
        "rounds": rounds,
    }
    args.raw.write_text(json.dumps(record) + "\n")


def command_parts(args: argparse.Namespace) -> dict:
    """Where a per-process offset lives: in `--procs` fresh processes, causal_attention's honest
    call on one shape and three of its parts, each timed as the engine times (flush, queue
    hold, spread and varied inputs) in `--passes` interleaved passes (with `--empty-cache`, the
    caching allocator's memory released before each; with `--fresh-stream`, each on a new
    stream); per part, each process's median."""
    from bench.engine_gpu import _cv

    runs = []
    for proc in range(args.procs):
        command = [sys.executable, __file__, "parts-one", "--shape", args.shape]
        command += ["--passes", str(args.passes)] + ["--empty-cache"] * args.empty_cache
        command += ["--fresh-stream"] * args.fresh_stream
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        print(done.stderr[-1500:], flush=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(proc, runs[-1], flush=True)
    report = {"shape": args.shape, "runs": runs, "parts": {}}
    for part in [name for name in runs[0] if name != "passes"]:
        medians = [run[part] for run in runs]
        report["parts"][part] = {"cv_pct": round(_cv(medians), 3), "medians_us": medians}
        print(part, report["parts"][part], flush=True)
    return report


def command_parts_one(args: argparse.Namespace) -> None:
    import secrets

    import torch
    import triton

    from bench.engine_gpu import _honest_calls, _import
    from runners import launches, performance, timing

    launches.install()  # as the candidate's process does
    honest = _import(SOLUTIONS / "causal_attention" / "honest.py", "parts_solution")
    _, call, bases = next(_honest_calls("causal_attention", [args.shape]))
    q, _, _, cu = bases[0]
    tokens, heads, dim = q.shape
    tile_end = torch.cumsum((cu.diff() + 63) // 64, 0).to(torch.int32)
    out = torch.zeros_like(q)

    def prologue(a):
        torch.cumsum((a[3].diff() + 63) // 64, 0).to(torch.int32)
        return torch.zeros_like(a[0])

    def kernel(a):
        grid = (tokens // 64 + cu.shape[0] - 1, heads)
        honest.causal_attention_kernel[grid](
            *a[:3], a[3], tile_end, out, dim**-0.5, heads, cu.shape[0] - 1,
            D=dim, BD=triton.next_power_of_2(dim), BM=64, BN=64, ON_GPU=True,
        )  # fmt: skip
        return out

    parts = {"call": call, "prologue": prologue, "kernel": kernel, "zeros": lambda a: a[0] * 0}
    medians: dict[str, list[float]] = {name: [] for name in parts}
    with torch.no_grad():
        for _ in range(args.passes):
            if args.empty_cache:  # the next pass's memory is mapped anew
                torch.cuda.empty_cache()
            stream = torch.cuda.Stream() if args.fresh_stream else torch.cuda.current_stream()
            for name, part in parts.items():
                settings = timing.Settings(
                    cap_s=performance.DEFAULT_TIME_CAP_S / performance.COMPUTE_ROUNDS,
                    flush_bytes=performance.FLUSH_MIN_BYTES,
                    spread_bytes=performance.SPREAD_BYTES,
                    hold_timeout_us=performance.HOLD_TIMEOUT_US,
                    vary_seed=secrets.randbits(48),
                )
                with torch.cuda.stream(stream):
                    samples = timing.measure(part, bases, device="cuda", settings=settings)
                medians[name].append(statistics.median(samples.event_ms) * 1e3)
    report = {name: round(statistics.median(m), 3) for name, m in medians.items()}
    report["passes"] = {name: [round(v, 3) for v in m] for name, m in medians.items()}
    print(json.dumps(report))


def early_stop(us: list[float]) -> list[float]:
    """The prefix at which the engine's loop would have stopped (`runners.timing.measure`, its
    minimum taken as the default 50 samples: small shapes' rings can ask for more)."""
    from runners import timing

    settings, running = timing.Settings(), timing._Running()
    for n, value in enumerate(us, 1):
        running.add(value)
        if n >= settings.min_samples and running.rse() < settings.rse_target:
            return us[:n]
    return us


def middle_mean(us: list[float]) -> float:
    """The mean of the samples between the first and third quartiles."""
    ordered = sorted(us)
    quarter = len(ordered) // 4
    return statistics.fmean(ordered[quarter : len(ordered) - quarter] or ordered)


REDUCERS = {
    "median_early": lambda us: statistics.median(early_stop(us)),
    "median_full": statistics.median,
    "midmean_full": middle_mean,
}


def analyze(report: dict) -> dict:
    from bench.engine_gpu import _cv
    from runners.scoring import round_center

    # A rejected grade stops mid-gate, its later shapes untimed: only grades that passed count.
    runs = [run for run in report["runs"] if "rounds" in run and run.get("verdict") == "ok"]
    keys = list(runs[0]["rounds"]) if runs else []
    table: dict = {}
    for key in keys:
        taken = [len(run["rounds"][key]) for run in runs]  # more where a shape's rounds disagreed
        most = min(taken)
        row = table[key] = {
            "median_us": round(statistics.median(run["reported_us"][key] for run in runs), 2),
            "reported_cv_pct": round(_cv([run["reported_us"][key] for run in runs]), 3),
            "rounds": taken,
            "round_samples": [len(r["us"]) for r in runs[0]["rounds"][key]],
        }
        # Where a round's seconds go (grades collected since these were recorded): the whole
        # round of the shape, the re-check of its timed outputs, and the reference's part of it.
        for part in ("wall_s", "recheck_s", "expect_s"):
            seconds = [r[part] for run in runs for r in run["rounds"][key] if part in r]
            if seconds:
                row[f"round_{part}"] = round(statistics.median(seconds), 3)
        for name, reduce in REDUCERS.items():
            per_run = [[reduce(r["us"]) for r in run["rounds"][key]] for run in runs]
            for k in range(3, most + 1):
                row[f"{name}_{k}"] = round(_cv([round_center(m[:k]) for m in per_run]), 3)
        print(key, row, flush=True)
    return {"problem": report.get("problem"), "grades": len(runs), "shapes": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    collect = commands.add_parser("collect", help="grades in fresh processes, raw rounds kept")
    one = commands.add_parser("grade-one", help="one instrumented grade (collect runs it)")
    for sub in (collect, one):
        sub.add_argument("--problem", default="fp8_gemm")
        sub.add_argument("--rounds", type=int, help="rounds per shape (default: the engine's)")
        sub.add_argument("--full", action="store_true", help="no early stop within a round")
        sub.add_argument("--no-baselines", action="store_true", help="leave the reference untimed")
        sub.add_argument(
            "--busy-gap",
            type=float,
            help="runners.performance.COMPUTE_BUSY_GAP_S for the grade (default: the engine's)",
        )
    collect.add_argument("--runs", type=int, default=5)
    collect.add_argument("--out", type=Path, required=True)
    collect.add_argument(
        "--until", type=float, help="start no grade that would end past this epoch second"
    )
    collect.add_argument(
        "--grade-s",
        type=float,
        default=0.0,
        help="seconds --until assumes a grade takes, before one has ended",
    )
    one.add_argument("--solution", type=Path, required=True)
    one.add_argument("--raw", type=Path, required=True)
    one.add_argument("--device", default="cuda", help="cpu: to try the plumbing without a GPU")
    one.add_argument("--keep-result", action="store_true", help="keep the EvaluationResult")
    parts = commands.add_parser("parts", help="causal_attention's call and its parts, per process")
    parts.add_argument("--procs", type=int, default=10)
    parts.add_argument("--out", type=Path, required=True)
    parts_one = commands.add_parser("parts-one", help="one process of `parts`")
    for sub in (parts, parts_one):
        sub.add_argument("--shape", default="hidden0")
        sub.add_argument("--passes", type=int, default=3, help="each part timed this many times")
        sub.add_argument("--empty-cache", action="store_true", help="memory freed between passes")
        sub.add_argument("--fresh-stream", action="store_true", help="a new stream for each pass")
    again = commands.add_parser("analyze", help="the CV table of a collected report")
    again.add_argument("reports", type=Path, nargs="+", help="reports of the same problem")
    args = parser.parse_args()
    if args.command == "grade-one":
        command_grade_one(args)
    elif args.command == "parts-one":
        command_parts_one(args)
    elif args.command == "parts":
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "rounds_parts.json").write_text(json.dumps(command_parts(args), indent=1))
    elif args.command == "analyze":
        reports = [json.loads(path.read_text()) for path in args.reports]
        problems = sorted({str(report.get("problem")) for report in reports})
        if len(problems) > 1:
            parser.error(f"the reports are of different problems: {', '.join(problems)}")
        pooled = reports[0] | {"runs": [run for report in reports for run in report["runs"]]}
        print(json.dumps(analyze(pooled), indent=1))
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        report = command_collect(args)
        (args.out / f"rounds_{args.problem}_cv.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
