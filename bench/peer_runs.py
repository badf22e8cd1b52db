"""A peer's published agent runs graded by this engine, and where the two disagree.

The peer is KernelBench-Hard (a checkout of `Infatoshi/kernelbench.com`, or a folder of the same
layout): its H100 problems under `benchmarks/hard/problems-<gpu>/`, each run's final solution
under `public/runs/<gpu>/<run>_solution.py.txt` and the peer's verdict and per-shape figures under
`public/data/rundetail/<gpu>/<run>.json`. This script fetches nothing.

    python bench/peer_runs.py timing --checkout PEER --problem 03_paged_attention --out F.jsonl
        each published-correct solution of a problem timed four ways on one input per shape:
        do_bench, the engine's loop as it grades, the loop without its hold, do_bench over two
        input copies (what a solution keyed on input addresses pays for new inputs)

    python bench/peer_runs.py grade --checkout PEER --problems DEST --out F.jsonl [--gpus 4]
        [--until EPOCH] [--quick]
        every published run graded by the engine in a fresh process (one worker per GPU, pinned
        with CUDA_VISIBLE_DEVICES), then, for each one we grade correct, do_bench on the grade's
        own inputs per shape; DEST holds the problems imported by
        `python -m runners import-kernelbench-hard PEER --gpu h100 DEST` (imported if missing)

    python bench/peer_runs.py clocks --checkout PEER --problems DEST --run ID --json F.json
        [--shapes 3,4]
        one run's shapes timed by do_bench and by the engine's loop with and without its hold
        and from an idle device, with the host's time per call, while nvidia-smi samples the SM
        clock and power: whether a difference is the GPU's power limit under sustained load,
        the host's pace, or host work inside a call that waits on the device

    python bench/peer_runs.py their-check --checkout PEER --runs ID... --out F.jsonl
        the peer's own check.py on chosen runs (where their verdict differs from ours and they
        publish no reason), in a scratch copy of their problem folder: its exit status and output

    python bench/peer_runs.py report F.jsonl... --classes bench/peer_classes.json --out MD
        the agreement report: per run the peer's verdict and peak fraction and ours, our reason,
        engine / do_bench per shape, and each disagreement's class

Results are JSON lines appended to --out; a run already there is skipped (resumable).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runners.kernelbench_hard.published import (  # noqa: E402  (after the path is set)
    problems_dir,
    published_runs,
    slug_for,
)

SIDECAR_MARK = "# ===== sidecar: "


# -- the peer's layout (runners.kernelbench_hard.published) -----------------------------------
def solution_folder(run: dict[str, Any], work: Path) -> Path:
    """The run's published text as a solution folder: solution.py and any sidecar sources the
    peer appended to it (runners.solution_files.split_sidecars)."""
    from runners.solution_files import split_sidecars, write_solution_folder

    source, sidecars = split_sidecars(Path(run["solution_path"]).read_text())
    folder = work / run["run_id"]
    shutil.rmtree(folder, ignore_errors=True)
    write_solution_folder(folder, source, sidecars)
    return folder


def shapes_of(problem: Path) -> list[dict[str, int]]:
    return _import(problem / "shapes.py", "peer_shapes").SHAPES


def set_shape(reference: Any, shape: dict[str, int]) -> None:
    """Set the reference's module-level shape names, spelled as the shape's keys or upper-case."""
    for key, value in shape.items():
        name = key if hasattr(reference, key) else key.upper()
        if not hasattr(reference, name):
            raise KeyError(f"the reference has no shape name {key!r}")
        setattr(reference, name, value)


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# -- timing -------------------------------------------------------------------------------------
def command_timing(args: argparse.Namespace) -> None:
    import torch

    from runners import launches

    launches.install()  # as in the candidate process: the solution's Triton launches counted
    problem = problems_dir(args.checkout, args.gpu) / args.problem
    done = _done(args.out)
    runs = [r for r in published_runs(args.checkout, args.gpu) if r["problem"] == args.problem]
    for run in runs:
        if run["run_id"] in done or not run["correct"]:
            continue
        if args.runs and not any(key in run["run_id"] for key in args.runs):
            continue
        record = {"run_id": run["run_id"], "peer_ms": [s.get("ms") for s in run["shapes"]]}
        try:
            record["shapes"] = _time_run(problem, Path(run["solution_path"]), args)
        except Exception as exc:  # a solution that fails here is reported, not fatal
            record["error"] = f"{type(exc).__name__}: {exc}"[:500]
        torch.cuda.synchronize()
        _append(args.out, record)
        print(json.dumps(record)[:400], flush=True)


def _time_run(problem: Path, solution_path: Path, args: argparse.Namespace) -> list[dict]:
    import torch

    folder = solution_folder({"run_id": "timing", "solution_path": solution_path}, args.out.parent)
    reference = _import(problem / "reference.py", "reference")
    solution = _import(folder / "solution.py", "solution")
    rows = []
    for index, shape in enumerate(shapes_of(problem)):
        set_shape(reference, shape)
        torch.manual_seed(42)
        init = list(reference.get_init_inputs())
        model = reference.Model(*init).cuda().eval()
        candidate = solution.Model(*init).cuda().eval()
        candidate.load_state_dict(model.state_dict(), strict=True)
        torch.manual_seed(42)
        inputs = [a.cuda() if isinstance(a, torch.Tensor) else a for a in reference.get_inputs()]
        rows.append({"shape": index, **_variants(candidate, inputs)})
        del model, candidate, inputs
        torch.cuda.empty_cache()
    return rows


def do_bench_both(model: Any, inputs: list[Any]) -> tuple[float, float]:
    """do_bench's median in ms on `inputs`, and on two copies of them taken in turn."""
    import torch
    import triton.testing

    from runners import timing

    copies = [inputs, timing.fresh_copy(inputs)]
    turn = iter(range(10**9))
    with torch.no_grad():
        plain = triton.testing.do_bench(lambda: model(*inputs), return_mode="median")
        rotated = triton.testing.do_bench(
            lambda: model(*copies[next(turn) % 2]), return_mode="median"
        )
    return plain, rotated


def _variants(model: Any, inputs: list[Any]) -> dict[str, float]:

    from runners import performance, timing

    def call(args: list[Any]) -> Any:
        return model(*args)

    bench, rotated = do_bench_both(model, inputs)
    row = {"do_bench_us": bench * 1e3, "do_bench_two_copies_us": rotated * 1e3}
    for name, hold in (("engine", performance.HOLD_TIMEOUT_US), ("engine_no_hold", 0.0)):
        samples = timing.measure(call, [inputs], device="cuda", settings=engine_settings(hold))
        row[f"{name}_us"] = statistics.median(samples.event_ms) * 1e3
        row[f"{name}_host_us"] = statistics.median(samples.host_ms) * 1e3
    return {key: round(value, 2) for key, value in row.items()}


def engine_settings(hold_timeout_us: float):
    """The engine's timing loop as a grade runs it (L2 flush, spread input copies, the hold),
    with a one-second cap."""
    from runners import performance, timing

    return timing.Settings(
        cap_s=1.0,
        flush_bytes=performance.FLUSH_MIN_BYTES,
        spread_bytes=performance.SPREAD_BYTES,
        hold_timeout_us=hold_timeout_us,
        vary_seed=7,
    )


# -- grading ------------------------------------------------------------------------------------
# What a run's grade may take before the driver gives up on it (a grade's own limits are the
# engine's; this guards the batch against a hung process).
GRADE_TIMEOUT_S = 900
DOBENCH_TIMEOUT_S = 600
GRADE_ESTIMATE_S = 90  # no grade starts that would end past --until by this estimate
SLOW_ESTIMATE_S = 300  # the estimate for a grade of SLOW_PROBLEMS


def command_grade(args: argparse.Namespace) -> None:
    """Every published run not yet in --out, graded by one worker thread per GPU."""
    import queue
    import threading

    if not args.problems.is_dir():
        _run(
            [
                sys.executable,
                "-m",
                "runners",
                "import-kernelbench-hard",
                str(args.checkout),
                "--gpu",
                args.gpu,
                str(args.problems),
            ],
            os.environ.copy(),
            GRADE_TIMEOUT_S,
            args.out.parent / "import.log",
        )
    done = _done(args.out)
    pending: queue.Queue = queue.Queue()
    runs = [
        r
        for r in published_runs(args.checkout, args.gpu)
        if _matches(r, args.again)
        or (r["run_id"] not in done and (not args.only or args.only in r["run_id"]))
    ]
    for run in sorted(runs, key=lambda r: _order(r, args.first + args.again)):
        pending.put({**run, "slug": slug_for(run["problem"])})
    lock = threading.Lock()

    delays = dict(_delay(text) for text in args.delay)

    def worker(gpu: int) -> None:
        time.sleep(delays.get(gpu, 0.0))  # the GPU is busy with other work until then
        while True:
            try:
                run = pending.get_nowait()
            except queue.Empty:
                return
            if time.time() + _estimate(run) > (args.until or float("inf")):
                pending.put(run)  # left for a later call
                return
            record = grade_run(run, gpu, args)
            with lock:
                _append(args.out, record)
                print(_summary_line(record), flush=True)

    devices = [int(d) for d in args.devices.split(",")] if args.devices else range(args.gpus)
    threads = [threading.Thread(target=worker, args=(gpu,)) for gpu in devices]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"{pending.qsize()} run(s) left for a later call", flush=True)


# Problems whose grades take minutes (their largest shapes move gigabytes per call) go last, so
# a batch cut by its deadline has graded as many runs as it could.
SLOW_PROBLEMS = ("06_sonic_moe_swiglu",)
# Runs whose own code makes the grade long, with its length: LongCat-2.0's fp8 GEMM takes 40-60 s
# in its first call of every shape (two grades cut by a call's 10-minute limit, 2026-11-27): it
# fits only a call of its own (`--only LongCat-2.0_01_fp8`).
SLOW_RUNS = {"20260707_102426_longcat-claude_LongCat-2.0_01_fp8_gemm": 560.0}


def _estimate(run: dict[str, Any]) -> float:
    if run["run_id"] in SLOW_RUNS:
        return SLOW_RUNS[run["run_id"]]
    return SLOW_ESTIMATE_S if run["problem"] in SLOW_PROBLEMS else GRADE_ESTIMATE_S


def _order(run: dict[str, Any], first: list[str]) -> tuple[bool, float, str]:
    return (not _matches(run, first), _estimate(run), run["run_id"])


def _matches(run: dict[str, Any], keys: list[str]) -> bool:
    return any(key in run["run_id"] for key in keys)


def _delay(text: str) -> tuple[int, float]:
    gpu, seconds = text.split(":")
    return int(gpu), float(seconds)


def grade_run(run: dict[str, Any], gpu: int, args: argparse.Namespace) -> dict[str, Any]:
    """One run graded in a fresh engine process on `gpu`, then timed with do_bench if correct."""
    work = args.out.parent
    record = {key: run.get(key) for key in PEER_FIELDS} | {"gpu": gpu, "engine": ENGINE}
    record["peer_ms"] = [shape.get("ms") for shape in run.get("shapes") or []]
    try:
        folder = solution_folder(run, work / "solutions")
    except ValueError as exc:  # a publication we cannot split into files
        return record | {"ours": {"verdict": "unreadable", "reason": str(exc)[:300]}}
    record["sidecars"] = sorted(p.name for p in folder.iterdir() if p.name != "solution.py")
    env = os.environ | {
        "CUDA_VISIBLE_DEVICES": str(gpu),
        "ARENA_EXTRA_PROBLEMS": str(args.problems),
    }
    result_path = work / "results" / f"{run['run_id']}.json"
    result_path.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        __file__,
        "grade-one",
        "--problem",
        run["slug"],
        "--solution",
        str(folder),
        "--json",
        str(result_path),
    ] + ["--quick"] * args.quick
    started = time.perf_counter()
    tail = _run(command, env, GRADE_TIMEOUT_S, result_path.with_suffix(".log"))
    record["grade_s"] = round(time.perf_counter() - started, 1)
    if not result_path.is_file():
        return record | {"ours": {"verdict": "no_result", "reason": tail[-600:]}}
    result = json.loads(result_path.read_text())
    record["ours"] = digest(result)
    if result["verdict"] != "ok":  # the engine's staff log names held-out cases' errors
        record["log_tail"] = tail[-3000:]
    if result["verdict"] == "ok":
        bench_path = result_path.with_suffix(".do_bench.json")
        command = [
            sys.executable,
            __file__,
            "dobench-one",
            "--problem",
            run["slug"],
            "--solution",
            str(folder),
            "--json",
            str(bench_path),
        ]
        tail = _run(command, env, DOBENCH_TIMEOUT_S, bench_path.with_suffix(".log"))
        record["do_bench"] = (
            json.loads(bench_path.read_text()) if bench_path.is_file() else {"error": tail[-600:]}
        )
    return record


def engine_digest() -> str:
    """What engine graded a record: sha256 of the engine's Python sources, so that grades made
    before a change of the engine can be told apart and graded again."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted((ROOT / "runners").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return "runners sha256 " + digest.hexdigest()[:12]


ENGINE = engine_digest()
PEER_FIELDS = (
    "run_id",
    "problem",
    "harness",
    "model",
    "correct",
    "failure_reason",
    "peak_fraction",
    "annotation_verdict",
)


def digest(result: dict[str, Any]) -> dict[str, Any]:
    """What the report needs of an EvaluationResult."""
    gates = {gate["name"]: gate for gate in result["gates"]}
    static = gates.get("static", {}).get("details", {})
    performance = gates.get("performance", {}).get("details", {})
    return {
        "verdict": result["verdict"],
        "reason": result["reason"][:600],
        "score": result.get("score"),
        "hidden_score": result.get("hidden_score"),
        "failed_gate": next((g["name"] for g in result["gates"] if g["status"] == "fail"), None),
        "flags": [flag["rule"] for flag in static.get("flags", [])],
        "notes": {
            key: performance[key] for key in ("hold_dropped", "aliased") if key in performance
        },
        "aliased_outputs": bool(
            gates.get("correct_visible", {}).get("details", {}).get("aliased_outputs")
        ),
        "shapes": [
            {
                "name": shape_name(shape["set"], shape["index"]),
                "set": shape["set"],
                "correct": shape.get("correct"),
                "error": shape.get("error"),
                "median_us": (shape.get("time") or {}).get("median_us"),
                "peak_fraction": shape.get("peak_fraction"),
                "scored": shape.get("scored"),
            }
            for shape in result["shapes"]
        ],
        "cost": result.get("cost", {}),
    }


def shape_name(shape_set: str, index: int) -> str:
    """As the pages name a shape ("visible 2", "held-out case 4")."""
    return f"held-out case {index + 1}" if shape_set == "hidden" else f"{shape_set} {index + 1}"


def _summary_line(record: dict[str, Any]) -> str:
    ours = record["ours"]
    peer = "correct" if record["correct"] else record["failure_reason"]
    return (
        f"{record['run_id'][:70]:70} gpu{record['gpu']} {record.get('grade_s', 0):6.0f}s "
        f"peer {peer} {record['peak_fraction']} | ours {ours['verdict']} {ours.get('score')}"
    )


def _run(command: list[str], env: dict[str, str], timeout_s: float, log: Path) -> str:
    """The command's last 20,000 characters of output, written to `log` as it runs (a grade cut
    short by the machine's limit still shows how far it got)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as sink:
        try:
            subprocess.run(
                command,
                cwd=ROOT,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"timed out after {timeout_s} s: " + log.read_text(errors="replace")[-400:]
    return log.read_text(errors="replace")[-20_000:]


def command_grade_one(args: argparse.Namespace) -> None:
    """`python -m runners evaluate`, in this fresh process, without timing the reference (the
    report needs no eager or compile line); --quick: one timing round, so one candidate process
    (verdicts unchanged; a median from one process, less reproducible across grades)."""
    from runners import cli, performance

    performance.Performance._baselines = lambda self: []
    if args.quick:
        performance.TIMING_ROUNDS = performance.MORE_ROUNDS = {"cuda": 1, "cpu": 1}
        performance.COMPUTE_ROUNDS = 1
    cli.main(
        [
            "evaluate",
            "--problem",
            args.problem,
            "--solution",
            str(args.solution),
            "--device",
            "cuda",
            "--json",
            str(args.json),
            "--progress",
            "detail",
        ]
    )


def grade_models(args: argparse.Namespace, wanted: set[int] | None = None):
    """Per visible shape of a grade (those of `wanted`, 1-based, if given): its plan, the
    solution's model built as the reference process builds the reference's (the problem's
    seeds, parameters loaded from the reference), and the grade's own input sets (the problem's
    seeds and distributions)."""
    import torch

    from runners import oracle
    from runners.plan import plan_shapes
    from runners.problem import load_problem

    problem = load_problem(args.problem)
    reference_process = oracle.Oracle()
    reference_process.problem = problem
    reference_process.reference = _import(problem.path / "reference.py", "reference")
    solution = _import(Path(args.solution) / "solution.py", "solution")
    model_class = getattr(solution, "ModelNew", None) or solution.Model
    visible, _ = plan_shapes(problem, "cuda")
    for plan in visible:
        if wanted is not None and plan.index + 1 not in wanted:
            continue
        model, init = reference_process._reference_model(plan.message(), "cuda")
        init = [a.cpu() if isinstance(a, torch.Tensor) else a for a in init]
        candidate = model_class(*init)
        candidate.load_state_dict(model.state_dict(), strict=True)
        candidate = candidate.to("cuda").eval()
        del model
        reference = reference_process.reference
        input_sets = [
            oracle.grade_inputs(reference, seed, distribution, "cuda", problem.cases)
            for seed, distribution in zip(plan.seeds, plan.dists, strict=True)
        ]
        yield plan, candidate, input_sets
        del candidate, input_sets
        torch.cuda.empty_cache()


def command_dobench_one(args: argparse.Namespace) -> None:
    """triton.testing.do_bench per visible shape on the grade's own inputs (the problem's seeds and
    distributions, built as the reference process builds them), the median over the input sets
    as a grade takes it; also over two copies of each input set taken in turn (what a solution
    keyed on input addresses pays for inputs it has not seen)."""
    rows = []
    for plan, candidate, input_sets in grade_models(args):
        each, rotated, host = [], [], []
        for inputs in input_sets:
            plain, turned = do_bench_both(candidate, inputs)
            each.append(plain)
            rotated.append(turned)
            host.append(host_ms(candidate, inputs))
        rows.append(
            {
                "name": shape_name(plan.set, plan.index),
                "do_bench_us": round(statistics.median(each) * 1e3, 2),
                "do_bench_each_us": [round(v * 1e3, 2) for v in each],
                "two_copies_us": round(statistics.median(rotated) * 1e3, 2),
                "host_us": round(statistics.median(host) * 1e3, 2),
            }
        )
    args.json.write_text(json.dumps({"shapes": rows}, indent=1))


def host_ms(model: Any, inputs: list[Any], calls: int = 30) -> float:
    """The host's time per call from an idle device (the median in ms): from the call's start
    to its return, the device synchronized before each and never inside the window. Where it
    reaches the device time, the host is what bounds a loop of calls: do_bench, which queues
    calls back to back, reads the host's pace, while the engine's hold keeps it out."""
    import torch

    times = []
    with torch.no_grad():
        for _ in range(calls):
            torch.cuda.synchronize()
            started = time.perf_counter()
            model(*inputs)
            times.append(time.perf_counter() - started)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e3


def command_clocks(args: argparse.Namespace) -> None:
    """Where the engine and do_bench differ: each visible shape of --shapes of one published run,
    on the grade's first input set, timed by do_bench (calls back to back), by the engine's loop
    as it grades (a flush and a synchronize between calls, the hold), by that loop without the
    hold, and from an idle device (the flush synchronized before the start event, as the engine
    times a solution with streams of its own), then do_bench again, while nvidia-smi samples the
    GPU's SM clock, power and throttle reasons every 20 ms; with the host's time per call from
    an idle device. A call that runs at a lower clock under do_bench's sustained load reads
    slower there for the GPU's power limit; a call whose host time exceeds its device time is
    bound by the host, which do_bench reads and the hold keeps out; a call that waits on the
    device inside itself reads its host time from an idle device, which do_bench's flush
    hides."""
    import torch

    from runners.problem import EXTRA_PROBLEMS_ENV

    os.environ[EXTRA_PROBLEMS_ENV] = str(args.problems)
    (run,) = [r for r in published_runs(args.checkout, args.gpu) if args.run in r["run_id"]]
    args.problem = slug_for(run["problem"])
    args.solution = solution_folder(run, args.json.parent / "solutions")
    wanted = {int(index) for index in args.shapes.split(",")}
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    rows = []
    for plan, candidate, input_sets in grade_models(args, wanted):
        row = {"name": shape_name(plan.set, plan.index)}
        for name in CLOCKS_VARIANTS:
            with torch.no_grad(), GpuSampler(gpu) as sampler:
                median_ms, hold_dropped = _median_ms(name, candidate, input_sets[0])
            row[name] = {"us": round(median_ms * 1e3, 2), **sampler.summary()}
            if hold_dropped:
                row[name]["hold_dropped"] = True
        row["host_us"] = round(host_ms(candidate, input_sets[0]) * 1e3, 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.json.write_text(json.dumps({"shapes": rows}, indent=1))


# The loops `clocks` times each shape with, in this order.
CLOCKS_VARIANTS = ("do_bench", "engine", "engine_no_hold", "engine_idle", "do_bench_again")


def _median_ms(name: str, model: Any, inputs: list[Any]) -> tuple[float, bool]:
    """A variant's median in ms, and whether the engine's loop dropped its hold."""
    import triton.testing

    from runners import performance, timing

    if name.startswith("do_bench"):
        median = triton.testing.do_bench(lambda: model(*inputs), rep=2000, return_mode="median")
        return median, False
    hold = performance.HOLD_TIMEOUT_US if name == "engine" else 0.0
    settings = engine_settings(hold)
    settings.cap_s = 2.0
    settings.warmup_s = performance.COMPUTE_WARMUP_S  # as a compute-bound problem's grade warms
    settings.idle_start = name == "engine_idle"
    samples = timing.measure(lambda a: model(*a), [inputs], device="cuda", settings=settings)
    return statistics.median(samples.event_ms), samples.hold_dropped


class GpuSampler:
    """nvidia-smi sampling one GPU in the background: the medians of the SM clock (MHz) and the
    power draw (W) over the samples, and the throttle reasons seen."""

    QUERY = "clocks.sm,power.draw,clocks_throttle_reasons.active"

    def __init__(self, gpu: str):
        self.gpu = gpu

    def __enter__(self) -> GpuSampler:
        command = ["nvidia-smi", f"--query-gpu={self.QUERY}", "--format=csv,noheader,nounits"]
        self.process = subprocess.Popen(
            [*command, "-lms", "20", "-i", self.gpu], stdout=subprocess.PIPE, text=True
        )
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.process.terminate()
        self.lines = self.process.communicate(timeout=10)[0].splitlines()

    def summary(self) -> dict[str, Any]:
        rows = [line.split(", ") for line in self.lines if line.count(",") == 2]
        clocks = [float(row[0]) for row in rows if _is_number(row[0])]
        power = [float(row[1]) for row in rows if _is_number(row[1])]
        return {
            "samples": len(rows),
            "sm_mhz": statistics.median(clocks) if clocks else None,
            "power_w": round(statistics.median(power), 1) if power else None,
            "throttle": sorted({row[2].strip() for row in rows}),
        }


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# -- the report -----------------------------------------------------------------------------------
# Within this of do_bench on the grade's own inputs, a shape's engine time agrees (shapes of at
# least TIMED_US; shorter calls are launch-bound, where the engine's hold keeps the host's launch
# time out of the window by design).
AGREE_WITHIN = 0.05
TIMED_US = 50.0
# Where our verdict and theirs differ, the class says whose it is: what the engine catches that
# they publish as correct, a rule of ours (with why), their grading failing a solution we find
# correct (their infrastructure, or their check with no reason published), or our bug (none
# may be left). bench/peer_classes.json holds the classes read from
# the code of a run; the rest follow from the verdicts.
CLASSES = {
    "agree": "verdicts agree",
    "held_out_catch": "our held-out shapes catch a bug",
    "stress_catch": "our input cases catch a bug",
    "our_rule": "a rule of ours",
    "environment": "the grading machine lacks what it builds with",
    "peer_infrastructure": "their grading failed, not the solution",
    "peer_check": "their check fails it, with no reason published; ours pass it",
    "our_bug": "our bug",
}


def command_their_check(args: argparse.Namespace) -> None:
    """The peer's own check.py on runs whose verdicts differ from ours without a published
    reason (class peer_check): each run's solution folder copied into a scratch copy of the
    peer's problem folder inside the checkout (their check finds its `src` package two levels
    up), their check run there on this machine's GPU, its exit status and last lines appended
    as JSON lines. Their property cases need `hypothesis` installed."""
    problems = problems_dir(args.checkout, args.gpu)
    chosen = [run for run in published_runs(args.checkout, args.gpu) if _matches(run, args.runs)]
    if not chosen:
        raise SystemExit(f"no published {args.gpu} run matches {' or '.join(args.runs)}")
    for run in chosen:
        scratch = problems / f"_arena_check_{run['run_id']}"
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(problems / run["problem"], scratch)
        try:
            for path in solution_folder(run, scratch).iterdir():
                shutil.copy(path, scratch / path.name)
            started = time.perf_counter()
            try:
                done = subprocess.run(
                    [sys.executable, "check.py"],
                    cwd=scratch,
                    capture_output=True,
                    text=True,
                    timeout=args.timeout,
                    check=False,
                )
                status, output = done.returncode, done.stdout + done.stderr
            except subprocess.TimeoutExpired as expired:
                status, output = "timeout", str(expired.stdout or "")
            record = {
                "run_id": run["run_id"],
                "their_verdict": run.get("failure_reason") or "pass",
                "status": status,
                "seconds": round(time.perf_counter() - started, 1),
                "tail": output[-2000:],
            }
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        _append(args.out, record)
        print(f"{run['run_id']}: exit {status}: {record['tail'][-200:]!r}", flush=True)


def command_report(args: argparse.Namespace) -> None:
    records = _latest(
        [
            json.loads(line)
            for path in args.results
            for line in path.read_text().splitlines()
            if line
        ]
    )
    classes = json.loads(args.classes.read_text()) if args.classes.is_file() else {}
    for record in records:
        record["class"], record["why"] = classify(record, classes.get(record["run_id"]))
        record["timing_why"] = classes.get(record["run_id"], {}).get("timing", {})
    published = published_runs(args.checkout, args.gpu) if args.checkout else []
    args.out.write_text(render_report(records, published))
    print(f"{len(records)} runs -> {args.out}")


def _latest(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per run, the last written (a run graded again replaces its earlier grade)."""
    return sorted({r["run_id"]: r for r in records}.values(), key=lambda r: r["run_id"])


def classify(record: dict[str, Any], manual: dict[str, str] | None) -> tuple[str, str]:
    ours, theirs = record["ours"], bool(record["correct"])
    if ours["verdict"] in UNGRADED:
        return "our_bug", f"not graded ({ours['verdict']}): " + first_line(ours["reason"])[:200]
    if (ours["verdict"] == "ok") == theirs:
        return "agree", ""
    if manual and "class" in manual:  # read from the run's code; where the verdicts disagree
        return manual["class"], manual["why"]
    if theirs and ours.get("failed_gate") == "correct_hidden":
        return "held_out_catch", "visible shapes pass; a held-out shape fails"
    if theirs and ours.get("failed_gate") == "static":
        return "our_rule", ours["reason"]
    return "our_bug", "unclassified: " + ours["reason"][:200]


def render_report(records: list[dict[str, Any]], published: list[dict[str, Any]]) -> str:
    lines = [
        "# The peer's published H100 runs, graded by Kernel Arena",
        "",
        "Generated by `bench/peer_runs.py report` from the JSON lines of `bench/peer_runs.py "
        'grade` (commands and machines in `docs/benchmarks.md`, "Real agent code: '
        "KernelBench-Hard's published H100 runs\").",
        "",
        *_coverage(records, published),
        *_engines(records),
        *_summary(records),
        "",
        *_timing_section(records),
        "",
        "## Every run",
        "",
        "| run | problem | peer | ours | our reason | class |",
        "|---|---|---|---|---|---|",
    ]
    for record in records:
        ours = record["ours"]
        peer = (
            f"correct {record['peak_fraction']}" if record["correct"] else record["failure_reason"]
        )
        score = f" {ours['score']:.4f}" if isinstance(ours.get("score"), float) else ""
        why = record["why"] or ""
        lines.append(
            f"| {record['model']} ({record['harness']}) | {record['problem']} | {peer} | "
            f"{ours['verdict']}{score} | {_cell(first_line(ours['reason']), 160)} | "
            f"{record['class']}{': ' + _cell(why, 320) if why and why != ours['reason'] else ''} |"
        )
    return "\n".join(lines) + "\n"


def _coverage(records: list[dict[str, Any]], published: list[dict[str, Any]]) -> list[str]:
    """How many of the published runs the report covers, per problem (none: no checkout given)."""
    if not published:
        return []
    graded = {r["run_id"] for r in records}
    problems = sorted({r["problem"] for r in published})
    parts = [
        f"{p} {sum(r['run_id'] in graded for r in published if r['problem'] == p)}/"
        f"{sum(r['problem'] == p for r in published)}"
        for p in problems
    ]
    return [
        f"Graded so far: {len(graded)} of the {len(published)} published runs with a solution "
        f"({'; '.join(parts)}). `bench/peer_runs.py grade` resumes where the JSON lines end.",
        "",
    ]


def _engines(records: list[dict[str, Any]]) -> list[str]:
    """Which engine graded how many runs (a record without one predates the field)."""
    from collections import Counter

    counts = Counter(r.get("engine", "not recorded") for r in records)
    lines = [f"- {count} run(s) graded by the engine at {name}" for name, count in counts.items()]
    return ["Engines:", "", *lines, ""]


def _summary(records: list[dict[str, Any]]) -> list[str]:
    from collections import Counter

    problems = sorted({r["problem"] for r in records})
    correct = [r for r in records if r["correct"]]
    static = [r for r in correct if r["ours"].get("failed_gate") == "static"]
    counts = Counter(r["class"] for r in records)
    lines = [
        f"{len(records)} runs over {len(problems)} problems ({', '.join(problems)}); "
        f"{len(correct)} published as correct, {len(static)} of them refused by our static gate.",
        "",
        "| class | runs |",
        "|---|---:|",
    ]
    lines += [f"| {CLASSES.get(name, name)} | {count} |" for name, count in counts.most_common()]
    lines += [
        "",
        "| problem | runs | peer correct | ours ok | agree |",
        "|---|---:|---:|---:|---:|",
    ]
    for problem in problems:
        rows = [r for r in records if r["problem"] == problem]
        lines.append(
            f"| {problem} | {len(rows)} | {sum(bool(r['correct']) for r in rows)} | "
            f"{sum(r['ours']['verdict'] == 'ok' for r in rows)} | "
            f"{sum(r['class'] == 'agree' for r in rows)} |"
        )
    return lines


def _timing_section(records: list[dict[str, Any]]) -> list[str]:
    """Engine median over do_bench's, per shape of at least TIMED_US, for every run we graded
    correct; the shapes outside AGREE_WITHIN listed with the two-copies figure beside."""
    ratios, outside = [], []
    for record in records:
        bench = {row["name"]: row for row in (record.get("do_bench") or {}).get("shapes", [])}
        for shape in record["ours"].get("shapes", []):
            row = bench.get(shape["name"])
            if not row or not shape.get("median_us") or row["do_bench_us"] < TIMED_US:
                continue
            ratio = shape["median_us"] / row["do_bench_us"]
            ratios.append(ratio)
            if abs(ratio - 1) > AGREE_WITHIN:
                outside.append((record, shape, row, ratio))
    lines = [
        "## Timing against do_bench",
        "",
        f"{len(ratios)} shapes of {TIMED_US:.0f} us or more in do_bench, over the runs graded "
        f"correct: {sum(abs(r - 1) <= AGREE_WITHIN for r in ratios)} within "
        f"{AGREE_WITHIN:.0%} of do_bench on the grade's own inputs.",
    ]
    if ratios:
        lines.append(f"Median engine / do_bench: {statistics.median(ratios):.3f}.")
    explained = sum(shape["name"] in record["timing_why"] for record, shape, _, _ in outside)
    if outside:
        lines += [
            f"Of the {len(outside)} outside, {explained} with the reason measured; the rest not "
            "yet attributed. Host us: the host's time per call from an idle device, where "
            "measured (a call whose host time reaches its device time is bound by the host: "
            "do_bench, queuing calls back to back, reads the host's pace; the engine's hold "
            "keeps it out).",
            "",
            "| run | shape | engine us | do_bench us | two copies us | host us | engine / do_bench "
            "| why |",
            "|---|---|---:|---:|---:|---:|---:|---|",
        ]
        for record, shape, row, ratio in outside:
            host = f"{row['host_us']:.1f}" if "host_us" in row else "-"
            why = record["timing_why"].get(shape["name"], "not attributed yet")
            lines.append(
                f"| {record['model']} {record['problem']} | {shape['name']} | "
                f"{shape['median_us']:.1f} | {row['do_bench_us']:.1f} | {row['two_copies_us']:.1f} "
                f"| {host} | {ratio:.3f} | {why} |"
            )
    return lines


def first_line(text: str) -> str:
    """A reason's first line: a compiler error goes on to quote the solution's code."""
    return text.split("\n", 1)[0]


def _cell(text: str, limit: int) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- files --------------------------------------------------------------------------------------
# Records of runs the batch could not grade (a publication it could not split, a grade that
# left no result): graded again by the next call.
UNGRADED = ("unreadable", "no_result")


def _done(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    records = [json.loads(line) for line in path.read_text().splitlines() if line]
    return {r["run_id"] for r in records if r["ours"]["verdict"] not in UNGRADED}


def _append(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as file:
        file.write(json.dumps(record) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    timing_parser = commands.add_parser("timing", help="one problem's runs timed four ways")
    timing_parser.add_argument("--checkout", type=Path, required=True)
    timing_parser.add_argument("--gpu", default="h100")
    timing_parser.add_argument("--problem", required=True)
    timing_parser.add_argument("--runs", nargs="*", default=[], help="run id substrings")
    timing_parser.add_argument("--out", type=Path, required=True)
    grade = commands.add_parser("grade", help="every published run, graded and timed")
    grade.add_argument("--checkout", type=Path, required=True)
    grade.add_argument("--gpu", default="h100")
    grade.add_argument("--problems", type=Path, required=True, help="the imported problems")
    grade.add_argument("--out", type=Path, required=True)
    grade.add_argument("--gpus", type=int, default=1, help="worker threads, one per GPU")
    grade.add_argument("--devices", help="the GPUs to grade on (0,1): one worker each")
    grade.add_argument("--until", type=float, help="start no grade past this epoch second")
    grade.add_argument("--only", help="a run id substring")
    grade.add_argument(
        "--first", nargs="*", default=[], help="run id substrings: these runs are graded first"
    )
    grade.add_argument(
        "--again",
        nargs="*",
        default=[],
        help="run id substrings: these runs are graded again (first), even if graded already",
    )
    grade.add_argument(
        "--delay", nargs="*", default=[], help="GPU:SECONDS, a GPU that joins the batch later"
    )
    grade.add_argument("--quick", action="store_true")
    one = commands.add_parser("grade-one", help="(internal) one grade in this process")
    dobench = commands.add_parser("dobench-one", help="(internal) do_bench on a grade's inputs")
    for sub in (one, dobench):
        sub.add_argument("--problem", required=True)
        sub.add_argument("--solution", type=Path, required=True)
        sub.add_argument("--json", type=Path, required=True)
    one.add_argument("--quick", action="store_true")
    clocks = commands.add_parser("clocks", help="engine and do_bench four ways, the GPU's clocks")
    clocks.add_argument("--checkout", type=Path, required=True)
    clocks.add_argument("--gpu", default="h100")
    clocks.add_argument("--problems", type=Path, required=True, help="the imported problems")
    clocks.add_argument("--run", required=True, help="a run id substring naming one run")
    clocks.add_argument("--json", type=Path, required=True)
    clocks.add_argument("--shapes", default="4", help="visible shape indexes, 1-based: 3,4")
    theirs = commands.add_parser("their-check", help="the peer's check.py on chosen runs")
    theirs.add_argument("--checkout", type=Path, required=True)
    theirs.add_argument("--gpu", default="h100")
    theirs.add_argument("--runs", nargs="+", required=True, help="run id substrings")
    theirs.add_argument("--out", type=Path, required=True)
    theirs.add_argument("--timeout", type=float, default=300.0)
    report = commands.add_parser("report", help="the agreement report (markdown)")
    report.add_argument("results", type=Path, nargs="+")
    report.add_argument("--classes", type=Path, required=True)
    report.add_argument("--out", type=Path, required=True)
    report.add_argument("--checkout", type=Path, help="count the published runs covered")
    report.add_argument("--gpu", default="h100")
    args = parser.parse_args()
    started = time.perf_counter()
    handlers = {
        "timing": command_timing,
        "grade": command_grade,
        "grade-one": command_grade_one,
        "dobench-one": command_dobench_one,
        "clocks": command_clocks,
        "report": command_report,
        "their-check": command_their_check,
    }
    handlers[args.command](args)
    if args.command in ("timing", "grade"):
        print(f"done in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
