"""GPU measurements of the evaluation engine, for docs/benchmarks.md ("Engine (H100)").

    python bench/engine_gpu.py grade --out DIR     # each honest solution; softmax twice (warm)
    python bench/engine_gpu.py repro --problem softmax --runs 5 --out DIR   # 5 fresh grades
    python bench/engine_gpu.py accuracy --problem softmax --grade DIR/softmax.json --out DIR
    python bench/engine_gpu.py accuracy --problem softmax --variants --out DIR   # attribution
    python bench/engine_gpu.py idle --problem softmax --hidden 0 --out DIR   # old vs new loop
    python bench/engine_gpu.py placement --problem softmax --procs 5 --out DIR  # input spread
    python bench/engine_gpu.py flush --problem softmax --out DIR   # dirty vs clean L2 flush
    python bench/engine_gpu.py clock --problem fp8_gemm --gap 1 --out DIR   # medians vs SM clock
    python bench/engine_gpu.py settle --problem fp8_gemm --out DIR   # time after idle gaps
    python bench/engine_gpu.py levels --problem fp8_gemm --out DIR   # per measurement: slots,
        host queue time (and with --clock, the clock of protocol 3's fixed hold)

Every grade runs `python -m runners evaluate` in a fresh process, as a worker would.
"""

from __future__ import annotations

import argparse
import dataclasses
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
    before its paged_attention paragraph of 2026-11-25 (sixth session) did."""
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


def command_idle(args: argparse.Namespace) -> dict:
    """The hidden0 outlier: the old loop (statistics.stdev over all samples after each one)
    against runners.timing, with and without a hold kernel, on one launch-bound shape; SM clocks
    read along the way, host-side times per sample kept as medians."""
    import torch

    from runners import performance, timing
    from runners.problem import load_problem

    problem = load_problem(args.problem)
    reference = _import(problem.path / "reference.py", "reference")
    solution = _import(SOLUTIONS / args.problem / "honest.py", "solution")
    params = problem.hidden[args.hidden]
    for name, value in params.items():
        setattr(reference, name, value)
    model = solution.ModelNew(*reference.get_init_inputs()).cuda().eval()
    bases = [[a.cuda() for a in reference.get_inputs()] for _ in range(3)]
    report = {"params": params}
    with torch.no_grad():
        for name in ("old", "new", "hold") * args.rounds:
            settings = timing.Settings(
                flush_bytes=256 * 2**20,
                hold_timeout_us=performance.HOLD_TIMEOUT_US if name == "hold" else 0.0,
            )
            time.sleep(1.0)  # an idle gap, as between shapes
            clocks = [_sm_clock()]
            if name == "old":
                event, host = _old_loop(model, bases, settings, clocks)
            else:
                samples = timing.measure(
                    lambda a: model(*a), bases, device="cuda", settings=settings
                )
                event, host = samples.event_ms, samples.host_ms
            clocks.append(_sm_clock())
            row = {"n": len(event), "sm_clock_mhz": clocks}
            for label, values in (("event", event), ("host", host)):
                us = [v * 1e3 for v in values]
                tenth = max(len(us) // 10, 1)
                row |= {
                    f"{label}_median_us": statistics.median(us),
                    f"{label}_first_tenth_median_us": statistics.median(us[:tenth]),
                    f"{label}_last_tenth_median_us": statistics.median(us[-tenth:]),
                }
            report.setdefault(name, []).append(row)
            print(name, row, flush=True)
    return report


def _old_loop(model, bases, settings, clocks) -> tuple[list[float], list[float]]:
    """runners.timing.measure as it was before the fix (10 warm-ups, stdev every sample)."""
    from runners import timing

    ring = timing._Ring(bases)
    clock = timing._CudaClock(settings.flush_bytes)
    for i in range(settings.warmup):
        clock.time(lambda a: model(*a), ring.next(i)[1])
    event: list[float] = []
    host: list[float] = []
    started = time.perf_counter()
    for i in range(settings.max_samples):
        sample = clock.time(lambda a: model(*a), ring.next(i)[1])
        event.append(sample[0])
        host.append(sample[1])
        if i % 500 == 499:
            clocks.append(_sm_clock())
        if len(event) >= settings.min_samples and (
            time.perf_counter() - started > settings.cap_s
            or timing.relative_standard_error(event) < settings.rse_target
        ):
            break
    return event, host


PLACEMENT_SPREADS = (0, 2 * 2**30)


def command_placement(args: argparse.Namespace) -> dict:
    """Between-process spread of the median with few or many distinct input/output places.

    Each fresh process times the chosen shapes with `Settings.spread_bytes` 0 (the minimum
    ring) and 2 GiB, alternately; the report gives each variant's median per process and the
    CV across processes, and inside one process the medians by ring slot (the input's place)."""
    return _across_processes(args, "placement-one", "spread", ("--out", str(args.out)))


def _across_processes(args, child: str, variant: str, extra: tuple[str, ...] = ()) -> dict:
    """Run `child` in args.procs fresh processes (each prints {shape: {variant: {median_us}}}
    as its last line) and report each shape and variant's median and CV across them."""
    runs = []
    for proc in range(args.procs):
        command = [sys.executable, __file__, child, "--problem", args.problem]
        command += ["--shapes", *args.shapes, *extra]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        print(done.stderr[-2000:], flush=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(proc, runs[-1], flush=True)
    report = {"problem": args.problem, "runs": runs, variant: {}}
    for key in runs[0]:
        for value in runs[0][key]:
            medians = [run[key][value]["median_us"] for run in runs]
            report[variant][f"{key} {variant}={value}"] = row = {
                "median_us": statistics.median(medians),
                "cv_pct": _cv(medians),
                "runs": medians,
            }
            print(key, value, row, flush=True)
    return report


def command_placement_one(args: argparse.Namespace) -> None:
    import torch

    from runners import timing

    report: dict = {}
    for key, call, bases in _honest_calls(args.problem, args.shapes):
        report[key] = {}
        with torch.no_grad():
            for spread in PLACEMENT_SPREADS * 2:  # alternately, twice
                settings = timing.Settings(flush_bytes=256 * 2**20, spread_bytes=spread)
                samples = timing.measure(call, bases, device="cuda", settings=settings)
                us = [v * 1e3 for v in samples.event_ms]
                slots = timing._Ring(bases, spread).slots + 1  # the input's places, in turn
                by_slot = [statistics.median(us[s::slots]) for s in range(min(slots, len(us)))]
                row = _sample_stats(us) | {
                    "slots": slots,
                    "slot_median_min_us": min(by_slot),
                    "slot_median_max_us": max(by_slot),
                }
                round_ = str(spread) if str(spread) not in report[key] else f"{spread}_again"
                report[key][round_] = row
    print(json.dumps(report))


HOLD_VARIANTS = (0.0, 5000.0)  # the hold's timeout in µs: none, and the engine's (queue hold)


def command_hold(args: argparse.Namespace) -> dict:
    """Between-process spread of the median with and without a hold kernel, timed as the
    engine times a candidate: its Settings (flush, spread, a round's cap, a fresh vary seed per
    pass), the launch counter installed before the solution is imported, and each variant
    timed in 3 passes whose medians are reduced by their median (the engine's rounds)."""
    return _across_processes(args, "hold-one", "hold")


def command_hold_one(args: argparse.Namespace) -> None:
    import secrets

    import torch

    from runners import launches, performance, timing

    launches.install()  # as the candidate's process does, before the solution is imported
    report: dict = {}
    for key, call, bases in _honest_calls(args.problem, args.shapes):
        rounds: dict[str, list[float]] = {str(h): [] for h in HOLD_VARIANTS}
        with torch.no_grad():
            for hold in HOLD_VARIANTS * 3:  # alternately: 3 passes of each
                settings = timing.Settings(
                    cap_s=performance.DEFAULT_TIME_CAP_S / performance.TIMING_ROUNDS["cuda"],
                    flush_bytes=performance.FLUSH_MIN_BYTES,
                    spread_bytes=performance.SPREAD_BYTES,
                    vary_seed=secrets.randbits(48),
                    hold_timeout_us=hold,
                )
                samples = timing.measure(call, bases, device="cuda", settings=settings)
                rounds[str(hold)].append(statistics.median(samples.event_ms) * 1e3)
        report[key] = {
            hold: {"median_us": statistics.median(medians), "passes": medians}
            for hold, medians in rounds.items()
        }
    print(json.dumps(report))


def _bracket_holds(holds: list[tuple]) -> None:
    """Make every hold the fixed spin of timing protocol 3, bracketed by events, and append the
    events to `holds`: the spin's known cycles over its duration give the clock each sample's
    hold ran at (the queue hold of protocol 4 spins for as long as the host takes instead)."""
    import torch

    from runners import hold

    def wait(self):
        before, after = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        before.record()
        hold._sleep(hold.FALLBACK_CYCLES)
        after.record()
        holds.append((before, after, hold.FALLBACK_CYCLES))

    hold.QueueHold.wait = wait


def command_clock(args: argparse.Namespace) -> dict:
    """Whether a shape's round medians follow the SM clock: in args.procs fresh processes, the
    shapes timed in args.rounds rounds each, in turn, at the engine's settings, with the hold
    kernel bracketed by events, so that each sample carries the clock it ran at (the hold spins a
    known number of cycles: MHz = cycles / its duration in µs)."""
    runs = []
    for _ in range(args.procs):
        command = [sys.executable, __file__, "clock-one", "--problem", args.problem]
        command += ["--shapes", *args.shapes, "--rounds", str(args.rounds), "--gap", str(args.gap)]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        print(done.stderr[-2000:], flush=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    report: dict = {"problem": args.problem, "runs": runs, "shapes": {}}
    for key in args.shapes:
        rounds = [r for run in runs for r in run if r["shape"] == key]
        medians = [r["median_us"] for r in rounds]
        # the spread left if the call were wholly clock-bound (time x clock is then constant)
        scaled = [r["median_us"] * r["clock_mhz"] for r in rounds]
        report["shapes"][key] = row = {
            "median_us": statistics.median(medians),
            "round_cv_pct": _cv(medians),
            "clock_mhz": [r["clock_mhz"] for r in rounds],
            "scaled_round_cv_pct": _cv(scaled),
            "process_medians_us": [
                statistics.median(r["median_us"] for r in run if r["shape"] == key) for run in runs
            ],
        }
        print(key, {k: v for k, v in row.items() if k != "clock_mhz"}, flush=True)
    return report


def command_clock_one(args: argparse.Namespace) -> None:
    import secrets

    import torch

    from runners import launches, performance, timing

    launches.install()  # as the candidate's process does, before the solution is imported
    holds: list[tuple] = []
    _bracket_holds(holds)
    calls = list(_honest_calls(args.problem, args.shapes))
    rounds = []
    started = time.perf_counter()
    with torch.no_grad():
        for round_ in range(args.rounds):
            for key, call, bases in calls:
                settings = timing.Settings(
                    cap_s=performance.DEFAULT_TIME_CAP_S / performance.TIMING_ROUNDS["cuda"],
                    flush_bytes=performance.FLUSH_MIN_BYTES,
                    spread_bytes=performance.SPREAD_BYTES,
                    vary_seed=secrets.randbits(48),
                    hold_timeout_us=performance.HOLD_TIMEOUT_US,
                )
                holds.clear()
                at = time.perf_counter() - started
                samples = timing.measure(call, bases, device="cuda", settings=settings)
                torch.cuda.synchronize()
                # the warm-up's holds come first: keep the ones of the timed samples
                held = holds[-len(samples.event_ms) :]
                mhz = [c / (b.elapsed_time(a) * 1e3) for b, a, c in held]
                us = [v * 1e3 for v in samples.event_ms]
                rounds.append(
                    {
                        "shape": key,
                        "round": round_,
                        "at_s": round(at, 3),
                        "median_us": statistics.median(us),
                        "clock_mhz": statistics.median(mhz),
                        "clock_min_mhz": min(mhz),
                        "n": len(us),
                        "us": [round(v, 2) for v in us],
                        "mhz": [round(v, 1) for v in mhz],
                    }
                )
                time.sleep(args.gap)  # the device idles, as between a grade's rounds
    print(json.dumps(rounds))


def command_settle(args: argparse.Namespace) -> dict:
    """How long a shape's time takes to settle after the device idles: in one process, for each
    shape and each idle gap, the device sleeps for the gap, then the engine's loop (flush, hold,
    call, on varied inputs) runs for args.seconds with no warm-up; the report gives the median of
    each args.window_s window of samples, against the time since the load began."""
    import secrets

    import torch

    from runners import performance, timing

    report: dict = {"problem": args.problem, "shapes": {}}
    with torch.no_grad():
        for key, call, bases in _honest_calls(args.problem, args.shapes):
            stamps: list[float] = []

            def stamped(call_args, call=call, stamps=stamps):
                stamps.append(time.perf_counter())
                return call(call_args)

            settings = timing.Settings(
                warmup=0,
                warmup_s=0.0,
                max_samples=10**6,
                cap_s=args.seconds,
                rse_target=0.0,
                flush_bytes=performance.FLUSH_MIN_BYTES,
                spread_bytes=performance.SPREAD_BYTES,
                hold_timeout_us=performance.HOLD_TIMEOUT_US,
            )
            timing.measure(stamped, bases, device="cuda", settings=settings)  # allocations
            rows = report["shapes"][key] = {}
            for gap in args.gaps:
                torch.cuda.synchronize()
                time.sleep(gap)
                stamps.clear()
                seeded = dataclasses.replace(settings, vary_seed=secrets.randbits(48))
                samples = timing.measure(stamped, bases, device="cuda", settings=seeded)
                start = stamps[0]
                windows: dict[int, list[float]] = {}
                for at, ms in zip(stamps, samples.event_ms, strict=True):
                    windows.setdefault(int((at - start) / args.window_s), []).append(ms * 1e3)
                steady = statistics.median(
                    ms * 1e3
                    for at, ms in zip(stamps, samples.event_ms, strict=True)
                    if at - start >= args.seconds - 1.0
                )
                rows[f"gap_{gap:g}s"] = {
                    "steady_us": round(steady, 2),
                    "windows": [
                        [round(w * args.window_s, 2), round(statistics.median(v), 2), len(v)]
                        for w, v in sorted(windows.items())
                    ],
                }
                first = rows[f"gap_{gap:g}s"]["windows"][:5]
                print(key, gap, "steady", round(steady, 2), "first windows", first, flush=True)
    return report


def command_levels(args: argparse.Namespace) -> dict:
    """What sets a shape's level from one measurement to the next: in one process, each shape is
    measured args.measures times back to back (a fresh ring of inputs and a fresh seed each, as
    a grade's rounds are), and every sample carries its ring slot (where its inputs live), the
    clock its hold kernel ran at, and how long the host took to queue the call."""
    import secrets

    import torch

    from runners import performance, timing

    holds: list[tuple] = []
    if args.clock:
        _bracket_holds(holds)
    report: dict = {"problem": args.problem, "shapes": {}}
    with torch.no_grad():
        for key, call, bases in _honest_calls(args.problem, args.shapes):
            queued: list[float] = []

            def timed(call_args, call=call, queued=queued):
                at = time.perf_counter()
                out = call(call_args)
                queued.append((time.perf_counter() - at) * 1e6)
                return out

            settings = timing.Settings(
                cap_s=args.cap_s,
                flush_bytes=performance.FLUSH_MIN_BYTES,
                spread_bytes=performance.SPREAD_BYTES,
                hold_timeout_us=performance.HOLD_TIMEOUT_US,
            )
            slots = timing._Ring(bases, settings.spread_bytes).slots
            rows = report["shapes"][key] = []
            for _ in range(args.measures):
                holds.clear()
                queued.clear()
                seeded = dataclasses.replace(settings, vary_seed=secrets.randbits(48))
                samples = timing.measure(timed, bases, device="cuda", settings=seeded)
                torch.cuda.synchronize()
                n = len(samples.event_ms)
                first = len(queued) - n  # the warm-up's calls come first
                us = [v * 1e3 for v in samples.event_ms]
                mhz = [c / (b.elapsed_time(a) * 1e3) for b, a, c in holds[-n:]] or [0.0] * n
                by_slot: dict[int, list[float]] = {}
                for i, value in enumerate(us):
                    by_slot.setdefault((first + i) % slots, []).append(value)
                slot_medians = [statistics.median(v) for v in by_slot.values()]
                row = {
                    "median_us": round(statistics.median(us), 2),
                    "n": n,
                    "clock_mhz": round(statistics.median(mhz), 1),
                    "clock_range": [round(min(mhz), 1), round(max(mhz), 1)],
                    "us_clock_corr": (
                        round(statistics.correlation(us, mhz), 3) if args.clock and n > 2 else None
                    ),
                    "slots": slots,
                    "slot_medians_range": [
                        round(min(slot_medians), 2),
                        round(max(slot_medians), 2),
                    ],
                    "queue_us": [
                        round(q, 1) for q in statistics.quantiles(queued[first:], n=10)[::4]
                    ],
                    "queue_max_us": round(max(queued[first:]), 1),
                }
                rows.append(row)
                print(key, row, flush=True)
    return report


class _ReadFlush:
    """Stands in for the flush buffer: `zero_()` reads 256 MiB (a sum) instead of writing it,
    so L2 ends up holding clean lines; with `write` it zeroes first, then reads."""

    def __init__(self, write: bool):
        import torch

        self.buffer = torch.ones(64 * 2**20, dtype=torch.float32, device="cuda")
        self.total = torch.empty((), dtype=torch.float32, device="cuda")
        self.write = write

    def zero_(self):
        import torch

        if self.write:
            self.buffer.fill_(1.0)
        torch.sum(self.buffer, dim=0, out=self.total)


def command_flush(args: argparse.Namespace) -> dict:
    """The engine's loop with its flush (zeroing 256 MiB leaves L2 full of dirty lines that the
    timed call must write back) against a read-only flush and a write-then-read flush."""
    import torch

    from runners import timing

    original = timing._CudaClock
    report: dict = {}
    for key, call, bases in _honest_calls(args.problem, args.shapes):
        rows = report[key] = {}
        with torch.no_grad():
            for variant in ("zero", "read", "write_read") * args.rounds:
                settings = timing.Settings(flush_bytes=256 * 2**20, spread_bytes=2 * 2**30)
                if variant == "zero":
                    samples = timing.measure(call, bases, device="cuda", settings=settings)
                else:

                    def clock(flush_bytes, hold_timeout_us=0.0, write=variant == "write_read"):
                        made = original(1, hold_timeout_us)
                        made.flush = _ReadFlush(write)
                        return made

                    timing._CudaClock = clock
                    try:
                        samples = timing.measure(call, bases, device="cuda", settings=settings)
                    finally:
                        timing._CudaClock = original
                row = _sample_stats([v * 1e3 for v in samples.event_ms])
                rows.setdefault(variant, []).append(row)
                print(key, variant, {k: round(v, 1) for k, v in row.items()}, flush=True)
        for variant, measured in list(rows.items()):
            medians = [m["median_us"] for m in measured]
            rows[f"{variant}_cv_pct"] = _cv(medians)
    return report


def _sample_stats(us: list[float]) -> dict:
    deciles = statistics.quantiles(us, n=10)
    return {
        "median_us": statistics.median(us),
        "mean_us": statistics.fmean(us),
        "n": len(us),
        "p10_us": deciles[0],
        "p90_us": deciles[-1],
    }


def _honest_calls(slug: str, keys: list[str]):
    """For each shape key ("visible1", "hidden0"): the honest solution's call on CUDA and the
    3 seeds' inputs, as the engine times them. Each shape's memory is freed before the next."""
    import torch

    from runners.problem import load_problem

    problem = load_problem(slug)
    reference = _import(problem.path / "reference.py", "reference")
    solution = _import(SOLUTIONS / slug / "honest.py", "solution")
    for key in keys:
        set_name, index = key.rstrip("0123456789"), int(key.lstrip("abcdefghijklmnopqrstuvwxyz"))
        for name, value in getattr(problem, set_name)[index].items():
            setattr(reference, name, value)
        model = solution.ModelNew(*reference.get_init_inputs()).cuda().eval()
        bases = _seed_inputs(reference)
        yield key, lambda args, m=model: m(*args), bases
        del model, bases
        torch.cuda.empty_cache()


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
    idle = commands.add_parser("idle", help="old vs new timing loop on one small hidden shape")
    idle.add_argument("--problem", default="softmax")
    idle.add_argument("--hidden", type=int, default=0)
    idle.add_argument("--rounds", type=int, default=2)
    idle.set_defaults(handler=command_idle)
    placement = commands.add_parser("placement", help="median spread vs distinct input places")
    placement.add_argument("--problem", default="softmax")
    placement.add_argument("--procs", type=int, default=5)
    placement.add_argument("--shapes", nargs="+", default=["visible1", "visible2", "visible0"])
    placement.set_defaults(handler=command_placement)
    hold = commands.add_parser("hold", help="median spread with and without a hold kernel")
    hold.add_argument("--problem", default="rmsnorm")
    hold.add_argument("--procs", type=int, default=5)
    hold.add_argument("--shapes", nargs="+", default=["visible0", "visible2", "hidden0"])
    hold.set_defaults(handler=command_hold)
    hold_one = commands.add_parser("hold-one", help="one process of `hold`")
    hold_one.add_argument("--problem", default="rmsnorm")
    hold_one.add_argument("--shapes", nargs="+", default=["visible0", "visible2", "hidden0"])
    hold_one.set_defaults(handler=command_hold_one)
    clock = commands.add_parser("clock", help="round medians against the SM clock")
    clock_one = commands.add_parser("clock-one", help="one process of `clock`")
    for sub in (clock, clock_one):
        sub.add_argument("--problem", default="fp8_gemm")
        sub.add_argument("--shapes", nargs="+", default=["visible0", "visible2", "hidden5"])
        sub.add_argument("--rounds", type=int, default=10)
        sub.add_argument("--gap", type=float, default=0.0, help="idle seconds after each round")
    clock.add_argument("--procs", type=int, default=2)
    clock.set_defaults(handler=command_clock)
    clock_one.set_defaults(handler=command_clock_one)

    settle = commands.add_parser("settle", help="a shape's time after idle gaps, by window")
    settle.add_argument("--problem", default="fp8_gemm")
    settle.add_argument("--shapes", nargs="+", default=["visible0", "visible2", "hidden5"])
    settle.add_argument("--gaps", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    settle.add_argument("--seconds", type=float, default=3.0, help="of load after each gap")
    settle.add_argument("--window-s", type=float, default=0.1)
    settle.set_defaults(handler=command_settle)

    levels = commands.add_parser("levels", help="a shape's level per measurement: slot, clock")
    levels.add_argument("--problem", default="fp8_gemm")
    levels.add_argument("--shapes", nargs="+", default=["visible2", "visible0", "hidden5"])
    levels.add_argument("--measures", type=int, default=8)
    levels.add_argument("--cap-s", type=float, default=1.0)
    levels.add_argument("--clock", action="store_true", help="the fixed hold, read as a clock")
    levels.set_defaults(handler=command_levels)

    placement_one = commands.add_parser("placement-one", help="one process of `placement`")
    placement_one.add_argument("--problem", default="softmax")
    placement_one.add_argument("--shapes", nargs="+", required=True)
    placement_one.set_defaults(handler=command_placement_one)
    flush = commands.add_parser("flush", help="dirty (zeroing) vs clean (reading) L2 flush")
    flush.add_argument("--problem", default="softmax")
    flush.add_argument("--shapes", nargs="+", default=["visible1", "visible2", "visible3"])
    flush.add_argument("--rounds", type=int, default=4)
    flush.set_defaults(handler=command_flush)
    for sub in (
        grade_cmd,
        repro,
        accuracy,
        idle,
        placement,
        placement_one,
        flush,
        hold,
        clock,
        settle,
        levels,
    ):
        sub.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command in ("placement-one", "hold-one", "clock-one"):
        args.handler(args)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    report = args.handler(args)
    target = args.out / f"engine_{args.command}.json"
    target.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=1)[:6000])


if __name__ == "__main__":
    main()
