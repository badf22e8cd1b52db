"""Validation of the problem deck on a GPU, for docs/problems.md.

    python bench/deck_gpu.py measure --out DIR [--problems a,b] [--compile visible|all|none]
        [--shapes hidden2,visible0]
    python bench/deck_gpu.py grade --out DIR --baselines DIR/deck.json [--problems a,b]
        [--verdicts-only]

`measure` works in one process, shape by shape (visible, then held-out): the reference's inputs
and outputs for every seed, the eager, torch.compile and library (reference.py's Library)
timings (and, for kernel-to-kernel problems, the starter's timing and correctness), the
honest solution's correctness, error margin and timing, and whether each negative
control fails where it should (`hardcoded` must pass the visible shapes and fail a held-out one;
every other control must fail a visible one). Timings use the engine's loop (runners.timing:
L2 flush, fresh input copies) with a shorter cap than a grading. It writes DIR/deck.json after
every shape and stops starting shapes at --deadline seconds.

`grade` runs the engine (runners.evaluate) on each problem's honest solution with the reference
timings from `measure` as cached baselines (the starter's too, and its held-out correctness),
and writes DIR/grades.json: each result in full, the starter's figures and quadrant included.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SOLUTIONS = ROOT / "tests" / "runners" / "solutions"
DECK = (
    "add_rmsnorm",
    "fp8_gemm",
    "w4a16_gemm",
    "topk",
    "paged_attention",
    "causal_attention",
    "moe_swiglu",
    "gated_delta_rule",
)
NEGATIVE = ("all_zero", "lower_precision", "hardcoded", "balanced", "contiguous")
# Kernel-to-kernel controls: the starter verbatim must pass every visible shape (speedup about 1
# over the starter); plain PyTorch computes the right answer and must fail the static gate on its
# category instead, so `measure` only checks it statically.
POSITIVE = ("starter_copy",)
STATIC_ONLY = ("not_a_kernel",)
# What `grade --controls` expects of each control's verdict.
EXPECTED = {
    "honest": "ok",
    "starter_copy": "ok",
    "hardcoded": "incorrect_hidden",
    "not_a_kernel": "forbidden",
    "all_zero": "incorrect",
    "lower_precision": "incorrect",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["measure", "grade"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--problems", default=",".join(DECK))
    parser.add_argument("--compile", choices=["visible", "all", "none"], default="all")
    parser.add_argument("--deadline", type=float, default=540.0)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--baselines", type=Path)
    parser.add_argument("--time-cap", type=float, default=0.6)
    parser.add_argument("--shapes", default="", help="only these shape ids (hidden2,visible0)")
    parser.add_argument(
        "--controls", default="honest", help="grade: these controls of each problem (honest,...)"
    )
    parser.add_argument(
        "--verdicts-only",
        action="store_true",
        help="grade: the reference is not timed (no eager, compile or library figures); the "
        "verdicts and the candidate's own timings are unchanged",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    slugs = [s for s in args.problems.split(",") if s]
    if args.mode == "measure":
        Measure(args).run(slugs)
    else:
        grade(slugs, args)
    return 0


def _settings(device: str, cap_s: float):
    from runners.timing import Settings

    if device == "cpu":
        return Settings(warmup=1, min_samples=3, max_samples=5, cap_s=0.05)
    from runners.performance import FLUSH_MIN_BYTES, HOLD_TIMEOUT_US

    return Settings(
        warmup=5,
        warmup_s=0.05,
        min_samples=10,
        max_samples=400,
        cap_s=cap_s,
        rse_target=0.01,
        flush_bytes=FLUSH_MIN_BYTES,
        hold_timeout_us=HOLD_TIMEOUT_US,  # as the engine times (timing protocol 4)
    )


def _stats(samples) -> dict[str, float]:
    from runners.scoring import summarize

    stats = summarize([samples.event_ms])
    return {
        "median_us": stats.median_us,
        "p10_us": stats.p10_us,
        "p90_us": stats.p90_us,
        "n": stats.n,
    }


class Measure:
    def __init__(self, args):
        import torch

        from runners import environment, hardware, timing

        self.args, self.device = args, args.device
        self.started = time.perf_counter()
        self.report: dict[str, Any] = {"environment": environment.describe(self.device)}
        gpu = torch.cuda.get_device_name() if self.device == "cuda" else ""
        self.hardware = hardware.for_device(self.device, gpu)
        self.report["hardware"] = self.hardware.slug if self.hardware else None
        self.report["torch"] = torch.__version__
        self.report["protocol"] = timing.PROTOCOL
        self.report["problems"] = {}

    def left_s(self) -> float:
        return self.args.deadline - (time.perf_counter() - self.started)

    def save(self) -> None:
        self.report["elapsed_s"] = round(time.perf_counter() - self.started, 1)
        text = json.dumps(_finite(self.report), indent=1, default=str, allow_nan=False)
        (self.args.out / "deck.json").write_text(text)

    def run(self, slugs: list[str]) -> None:
        for slug in slugs:
            self.problem(slug)

    def problem(self, slug: str) -> None:
        from runners.oracle import _import_reference
        from runners.plan import plan_shapes
        from runners.problem import load_problem

        problem = load_problem(slug)
        reference = _import_reference(problem.path / "reference.py")
        visible, hidden = plan_shapes(problem, self.device)
        entry = {"version": problem.version, "shapes": [], "controls": {}}
        self.report["problems"][slug] = entry
        controls = [c for c in NEGATIVE + POSITIVE if (SOLUTIONS / slug / f"{c}.py").is_file()]
        entry["static"] = _static_controls(problem)
        verdicts = {c: {"failed_visible": [], "failed_hidden": []} for c in controls}
        wanted = {name for name in self.args.shapes.split(",") if name}
        for plan in visible + hidden:
            if wanted and plan.id not in wanted:
                continue
            if self.left_s() < 20:
                entry["stopped"] = f"deadline before {plan.id}"
                break
            try:
                row = self.shape(problem, reference, plan, controls, verdicts)
            except Exception as exc:  # record it and go on with the next shape
                row = {
                    "set": plan.set,
                    "index": plan.index,
                    "params": plan.params,
                    "error": f"{type(exc).__name__}: {str(exc)[:500]}",
                    "honest": {},
                    "seconds": 0.0,
                }
            entry["shapes"].append(row)
            entry["controls"] = _control_summary(verdicts)
            self.save()
            print(slug, plan.id, json.dumps(_brief(row)), flush=True)
        self.save()  # also a problem with no shape on this device (its static checks)

    def shape(self, problem, reference, plan, controls, verdicts) -> dict[str, Any]:
        import torch

        from runners import hardware
        from runners.problem import STARTER_CATEGORIES

        started = time.perf_counter()
        model, inputs, expected, rules = _prepare(problem, reference, plan, self.device)
        row: dict[str, Any] = {
            "set": plan.set,
            "index": plan.index,
            "params": plan.params,
            "case": plan.case,
        }
        work = {"flops": problem.flops(plan.params), "nbytes": problem.bytes(plan.params)}
        if self.hardware:
            row["sol_us"] = 1e6 * hardware.speed_of_light_s(
                self.hardware, dtype=problem.peak_dtype, **work
            )
        row["eager"] = self._time(model, inputs)
        if self._compiles(plan):
            row["compile"] = self._compiled(model, inputs)
        if hasattr(reference, "Library") and self.device == "cuda":
            row["library"] = self._library(reference, model, plan, inputs, expected, rules)
        if problem.category in STARTER_CATEGORIES:
            row["starter"] = self._starter(problem, reference, model, inputs, expected, rules)
            # None where the starter could not run: the engine then checks it itself.
            row["starter_correct"] = row["starter"].get("agreement", {}).get("correct")
        honest = _build(SOLUTIONS / problem.slug / "honest.py", reference, model, self.device)
        row["honest"] = _check(honest, inputs, expected, rules)
        row["honest"]["time"] = self._time(honest, inputs)
        for name in controls:
            if plan.set == "hidden" and name != "hardcoded":
                continue
            try:
                control = _build(
                    SOLUTIONS / problem.slug / f"{name}.py", reference, model, self.device
                )
                result = _check(control, inputs, expected, rules)
            except Exception as exc:  # a control that cannot even run has failed
                control, result = None, {"correct": False, "error": repr(exc)[:300]}
            if not result["correct"]:
                front = "hidden" if plan.set == "hidden" else "visible"
                verdicts[name][f"failed_{front}"].append(plan.index)
            del control
        for kind in ("eager", "compile", "library", "starter"):
            _throughput(row.get(kind), work, problem, self.hardware)
        _throughput(row["honest"].get("time"), work, problem, self.hardware)
        row["seconds"] = round(time.perf_counter() - started, 1)
        del model, inputs, expected, honest
        if self.device == "cuda":
            torch.cuda.empty_cache()
        return row

    def _compiles(self, plan) -> bool:
        wanted = self.args.compile == "all" or (
            self.args.compile == "visible" and plan.set == "visible"
        )
        return wanted and self.device == "cuda" and self.left_s() > 60

    def _time(self, model, inputs) -> dict[str, Any] | None:
        from runners import timing

        try:
            samples = timing.measure(
                lambda args: model(*args),
                inputs,
                device=self.device,
                settings=_settings(self.device, self.args.time_cap),
            )
        except Exception as exc:  # a baseline that cannot run is recorded, not fatal
            return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        return _stats(samples)

    def _compiled(self, model, inputs) -> dict[str, Any] | None:
        import torch

        torch._dynamo.reset()
        compiled = torch.compile(model, dynamic=False)
        started = time.perf_counter()
        try:
            with torch.no_grad():
                compiled(*[a.clone() if isinstance(a, torch.Tensor) else a for a in inputs[0]])
            torch.cuda.synchronize()
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        first_s = time.perf_counter() - started
        stats = self._time(compiled, inputs)
        if stats is not None:
            stats["first_call_s"] = round(first_s, 2)
        return stats

    def _library(self, reference, model, plan, inputs, expected, rules) -> dict[str, Any]:
        try:
            library = _build_library(reference, model, plan, self.device)
            agreement = _check(library, inputs, expected, rules)
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        stats = self._time(library, inputs) or {}
        return {**stats, "agreement": agreement}

    def _starter(self, problem, reference, model, inputs, expected, rules) -> dict[str, Any]:
        """starter.py timed like a baseline, and whether it is right (as the engine judges)."""
        try:
            starter = _build(problem.starter_path, reference, model, self.device)
            agreement = _check(starter, inputs, expected, rules)
        except Exception as exc:  # a starter that cannot even build is recorded, not fatal
            return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        stats = self._time(starter, inputs) or {}
        return {**stats, "agreement": agreement}


def _prepare(problem, reference, plan, device: str):
    """The reference model (its perturbed buffers too) and every seed's inputs (the problem's
    cases among their distributions) and expected outputs, as the oracle makes them
    (runners.oracle.Oracle._prepare_shape), with each input set's comparison rules."""
    import torch

    from runners import timing
    from runners.oracle import Oracle, as_output_list, grade_inputs

    oracle = Oracle()
    oracle.reference, oracle.problem = reference, problem
    model, _ = oracle._reference_model(plan.message(), device)
    inputs, expected = [], []
    for seed, distribution in zip(plan.seeds, plan.dists, strict=True):
        args = grade_inputs(reference, seed, distribution, device, problem.cases)
        with torch.no_grad():
            expected.append(as_output_list(model(*timing.fresh_copy(args))))
        inputs.append(args)
    return model, inputs, expected, [problem.tolerance_for(d) for d in plan.dists]


def _build(path: Path, reference, model, device: str):
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(f"solution_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    init = _init_args(reference)
    built = module.ModelNew(*init)
    built.load_state_dict(model.state_dict(), strict=True)
    return (
        built.to(device).eval().requires_grad_(False)
        if isinstance(built, torch.nn.Module)
        else built
    )


def _init_args(reference) -> list[Any]:
    import torch

    with torch.device("cpu"):
        return [a for a in reference.get_init_inputs()]


def _build_library(reference, model, plan, device: str):
    library = reference.Library(*_init_args(reference))
    library.load_state_dict(model.state_dict(), strict=True)
    return library.to(device).eval()


def _check(candidate, inputs, expected, rules) -> dict[str, Any]:
    """Correctness as the engine judges it (each input set under its own rules, from
    `_prepare`), plus the share of the tolerance used per output position; an index output
    compared up to ties has none (its values output's counts)."""
    import torch

    from runners import timing
    from runners.compare import Comparison, compare_call
    from runners.oracle import as_output_list

    comparison = Comparison()
    used: dict[str, float] = {}
    try:
        with torch.no_grad():
            for args, want, rule in zip(inputs, expected, rules, strict=True):
                got = as_output_list(candidate(*timing.fresh_copy(args)))
                compare_call(comparison, want, got, rule, args)
                for position, (w, g, tol) in enumerate(zip(want, got, rule, strict=False)):
                    if "ties" not in tol:  # named as the comparison's messages name it
                        name, share = f"output {position}", _tolerance_used(w, g, tol)
                        used[name] = max(used.get(name, 0.0), share)
    except Exception as exc:
        return {"correct": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return {
        "correct": comparison.correct,
        "max_abs_err": comparison.max_abs_err,
        "max_rel_err": comparison.max_rel_err,
        "tolerance_used": used,
        "error": comparison.error,
    }


def _tolerance_used(want, got, tolerance) -> float:
    """max |got - want| / (atol + rtol |want|) over finite elements; 1.0 is the limit."""
    import torch

    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return math.inf
    want64, got64 = want.double(), got.double()
    allowed = tolerance["atol"] + tolerance["rtol"] * want64.abs()
    diff = (got64 - want64).abs()
    off = torch.where(diff > 0, math.inf, 0.0)
    ratio = torch.where(allowed == 0, off, diff / allowed.clamp_min(1e-300))
    finite = torch.isfinite(want64)
    return float(ratio[finite].max()) if bool(finite.any()) else 0.0


def _throughput(stats, work, problem, hw) -> None:
    from runners.hardware import peak_fraction

    if not stats or "median_us" not in stats:
        return
    seconds = stats["median_us"] * 1e-6
    stats["tflops"] = work["flops"] / seconds / 1e12
    stats["gbps"] = work["nbytes"] / seconds / 1e9
    if hw:
        stats["peak_fraction"] = peak_fraction(
            hw, regime=problem.regime, dtype=problem.peak_dtype, seconds=seconds, **work
        )


def _control_summary(verdicts) -> dict[str, Any]:
    summary = {}
    for name, seen in verdicts.items():
        if name == "hardcoded":
            ok = not seen["failed_visible"] and bool(seen["failed_hidden"])
        elif name in POSITIVE:
            ok = not seen["failed_visible"]
        else:
            ok = bool(seen["failed_visible"])
        summary[name] = {**seen, "as_stated": ok}
    return summary


def _brief(row: dict) -> dict:
    def median(stats):
        return round(stats["median_us"], 1) if stats and "median_us" in stats else None

    honest = row["honest"]
    return {
        "eager": median(row.get("eager")),
        "compile": median(row.get("compile")),
        "library": median(row.get("library")),
        **({"starter": median(row["starter"])} if "starter" in row else {}),
        "honest": median(honest.get("time")),
        "ok": honest.get("correct"),
        "used": honest.get("tolerance_used"),
        "s": row["seconds"],
    }


def _finite(value: Any) -> Any:
    """JSON-safe: non-finite floats become the strings "inf", "-inf" or "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _static_controls(problem) -> dict[str, Any]:
    """The static gate's verdict on each static-only control, with the problem's category."""
    from runners.static_check import check_source

    found = {}
    for name in STATIC_ONLY:
        path = SOLUTIONS / problem.slug / f"{name}.py"
        if path.is_file():
            report = check_source(
                path.read_text(), forbidden=problem.forbidden, category=problem.category
            )
            rules = [hit.rule for hit in report.hits]
            found[name] = {"reason": report.reason, "as_stated": "category" in rules}
    return found


def grade(slugs: list[str], args) -> None:
    """Grade each problem's --controls through the engine. Controls expected to fail before
    timing (every one but honest and starter_copy) run first, four at a time, so that their
    CUDA builds overlap; the rest run one at a time, so that their timings do not."""
    from concurrent.futures import ThreadPoolExecutor

    from runners import performance

    performance.DEFAULT_TIME_CAP_S = args.time_cap
    if args.verdicts_only:  # as bench/peer_runs.py grades: minutes less on the largest problems
        performance.Performance._baselines = lambda self: []
    baselines = _cached_baselines(args.baselines) if args.baselines else {}
    wanted = [c for c in args.controls.split(",") if c]
    jobs = [(s, c) for s in slugs for c in wanted if (SOLUTIONS / s / f"{c}.py").is_file()]
    failing = [job for job in jobs if job[1] not in ("honest", *POSITIVE)]
    grades: dict[str, Any] = {}
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=4) as pool:
        entries = list(pool.map(lambda job: _grade_one(*job, args, baselines), failing))
    for job, entry in zip(failing, entries, strict=True):
        _record_grade(grades, job, entry, args.out)
    for job in [job for job in jobs if job not in failing]:
        if time.perf_counter() - started > args.deadline - 60:
            _record_grade(grades, job, {"skipped": "deadline"}, args.out)
            continue
        _record_grade(grades, job, _grade_one(*job, args, baselines), args.out)


def _grade_one(slug: str, control: str, args, baselines) -> dict[str, Any]:
    from runners.evaluate import evaluate

    path = SOLUTIONS / slug / f"{control}.py"
    result = evaluate(slug, path, device=args.device, baselines=baselines).to_dict()
    result["as_expected"] = result["verdict"] == EXPECTED.get(control, "ok")
    return result  # with the starter's figures and the run's quadrant


def _record_grade(grades: dict[str, Any], job, entry: dict[str, Any], out: Path) -> None:
    slug, control = job
    grades[slug if control == "honest" else f"{slug}/{control}"] = entry
    starter = entry.get("starter") or {}
    speedups = [s.get("speedup_starter") for s in entry.get("shapes", [])]
    speedups = [round(v, 2) for v in speedups if v]
    print(
        slug,
        control,
        entry.get("verdict", entry.get("skipped")),
        entry.get("as_expected"),
        entry.get("score"),
        entry.get("hidden_score"),
        starter.get("quadrant", "-"),
        f"vs starter {speedups}" if speedups else "",
        flush=True,
    )
    print("  ", str(entry.get("reason", ""))[:200], flush=True)
    text = json.dumps(_finite(grades), indent=1, allow_nan=False)
    (out / "grades.json").write_text(text)


def _cached_baselines(path: Path) -> dict[str, Any]:
    """Baseline-key mapping from a `measure` report (shapes it timed under eager), with the
    starter's timing and, on held-out shapes, its correctness for kernel-to-kernel problems."""
    from runners.problem import load_problem
    from runners.schema import BASELINE_KINDS, baseline_key
    from runners.timing import PROTOCOL

    report = json.loads(path.read_text())
    # Reports from before the protocol was recorded were timed under protocol 2.
    if report.get("protocol", 2) != PROTOCOL:
        print(f"{path}: timed under protocol {report.get('protocol', 2)}, not {PROTOCOL}: unused")
        return {}
    cached = {}
    # a deck report keeps them under "problems", the kernel-to-kernel report under "measure"
    for slug, entry in report.get("problems", report.get("measure", {})).items():
        problem = load_problem(slug)
        if problem.version != entry["version"]:
            continue
        for row in entry["shapes"]:
            key = baseline_key(
                problem.version, row["params"], report["hardware"], report["torch"], PROTOCOL
            )
            cached[key] = {kind: _as_timing(row.get(kind)) for kind in BASELINE_KINDS}
            if row["set"] == "hidden":
                cached[key]["starter_correct"] = row.get("starter_correct")
    return {k: v for k, v in cached.items() if v["eager"]}


def _as_timing(stats: dict | None) -> dict | None:
    if not stats or "median_us" not in stats:
        return None
    return {
        "median_us": stats["median_us"],
        "mean_us": stats["median_us"],
        "std_us": 0.0,
        "min_us": stats["p10_us"],
        "p10_us": stats["p10_us"],
        "p90_us": stats["p90_us"],
        "n": stats["n"],
        "rounds": 1,
    }


if __name__ == "__main__":
    raise SystemExit(main())
