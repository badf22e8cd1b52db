"""A synthetic run history for load tests and the board benchmark, never for the demo.

    python bench/synthetic_history.py [--runs-per-cell 4] [--seed 10]   # a dozen configurations
    python bench/synthetic_history.py --runs 10000                      # the benchmark's database

Times are at least each shape's speed-of-light time at the hardware row's peak for its regime,
plus a fixed cost per call (no peak fraction reaches 1), and scores come from the engine's own
scoring (``runners.scoring``). Every run written here has ``metadata["demo"] == "synthetic"``
and a note saying that no agent wrote it and no GPU graded it; pages show it as demo data.
Writing first removes the earlier synthetic runs (with their evaluations and shapes) and never
touches any other run. Figures come from seeded generators, so a seed always writes the same
history (dated back from now).
"""

import argparse
import functools
import math
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path

if __name__ == "__main__":  # a script: Django is set up before the models are imported
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena_web.settings")
    import django

    django.setup()

from django.db import transaction
from django.utils import timezone

from runners import hardware as engine_hardware
from runners import schema, scoring
from runners.schema import (
    GATE_NAMES,
    EvaluationResult,
    GateResult,
    ShapeResult,
    StarterComparison,
    TimingStats,
)
from runners.schema import Verdict as V
from submissions.boards import snapshot
from submissions.models import Evaluation, HardwareTarget, Harness, LanguageModel, Problem, Run
from submissions.services import synthetic
from submissions.services.evaluations import speedups, starter_columns
from submissions.services.registry import seed_registry

MARK = "synthetic"
NOTE = "Synthetic data (bench/synthetic_history.py): no agent wrote this run, no GPU graded it."
BATCH = 1000
# The verdicts of failing runs, in turn: every kind, the common ones more often.
FAILURE_CYCLE = (
    V.INCORRECT,
    V.BUILD_ERROR,
    V.INCORRECT_HIDDEN,
    V.RUNTIME_ERROR,
    V.INCORRECT,
    V.TIMEOUT,
    V.FORBIDDEN,
    V.INCORRECT_HIDDEN,
    V.CRASHED,
    V.BUILD_ERROR,
    V.INCORRECT,
    V.SYNTAX_ERROR,
    V.RUNTIME_ERROR,
    V.TIMING_REJECTED,
    V.INCORRECT_HIDDEN,
    V.RESOURCE_LIMIT,
    V.INCORRECT,
    V.INFRA_ERROR,
    V.MISSING_SOLUTION,
    V.TIMEOUT,
)
# The gate each verdict fails at (a missing solution skips them all).
FAIL_GATE = {
    V.OK: None,
    V.MISSING_SOLUTION: None,
    V.SYNTAX_ERROR: "static",
    V.FORBIDDEN: "static",
    V.BUILD_ERROR: "build",
    V.INFRA_ERROR: "build",
    V.RUNTIME_ERROR: "correct_visible",
    V.INCORRECT: "correct_visible",
    V.RESOURCE_LIMIT: "correct_visible",
    V.CRASHED: "correct_hidden",
    V.INCORRECT_HIDDEN: "correct_hidden",
    V.TIMEOUT: "performance",
    V.TIMING_REJECTED: "performance",
}
PASS_REASONS = {
    "static": "no static rule hit",
    "build": "imported, constructed and loaded the reference state_dict strictly",
    "correct_visible": "every visible shape matches the reference for 3 seeds",
    "correct_hidden": "every held-out case matches the reference for 3 seeds",
    "performance": "every shape timed",
    "score": "geomean of the visible peak fractions",
}
HIDDEN_CASES = ("edge", "edge", "scale-up", "scale-down", "alignment-stress", "alignment-stress")
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
# Below this many bytes a kernel is launch-bound and reaches a fraction of bandwidth only.
FULL_SPEED_BYTES = 2**26
REGRADE_SHARE = 0.12
BASELINES = {"cuda": ("eager", "compile", "library", "starter"), "cpu": ("eager",)}
# On the CPU target a call costs milliseconds under the Triton interpreter, microseconds in eager.
CPU_CALL_S = 2e-3
EAGER_CALL_S = 20e-6
# On a GPU a call costs at least its launch: a few microseconds for one kernel, more for an
# eager reference that launches several. Without it a tiny held-out shape would read 0.01 us.
GPU_CALL_S = 3e-6
MAX_FRACTION = 0.97
EAGER_GPU_CALL_S = 8e-6


@dataclass(frozen=True)
class Persona:
    """How one agent configuration behaves in the synthetic history."""

    model: str
    harness: str
    effort: str
    skill: float  # typical peak fraction of its correct kernels
    reliability: float  # chance that a run passes every gate
    output_tokens: int  # typical output tokens per run
    turns: int
    usd_per_mtok: tuple[float, float]  # input, output list prices
    days: int  # how far back its runs go
    targets: tuple[str, ...]
    volume: float = 1.0  # runs per cell, relative to the others
    problems: int = 99  # attempts the first N problems of the deck only


GPUS = ("h100-sxm", "h200")
ALL = (*GPUS, "cpu")
# A dozen configurations: one with a single run per cell, one that skipped a problem, one that
# ran on one GPU only; the CPU target has a few, as the real demo does.
PERSONAS = (
    Persona("claude-opus-4-5", "claude-code", "high", 0.80, 0.82, 62_000, 46, (5, 25), 45, ALL),
    Persona("claude-opus-4-5", "opencode", "", 0.74, 0.74, 54_000, 41, (5, 25), 40, GPUS),
    Persona(
        "claude-opus-4-1", "claude-code", "", 0.71, 0.72, 48_000, 38, (15, 75), 120, GPUS, 0.25
    ),
    Persona("claude-sonnet-4-5", "claude-code", "", 0.69, 0.72, 41_000, 43, (3, 15), 90, ALL),
    Persona(
        "claude-sonnet-4-5", "claude-code-print", "", 0.64, 0.66, 30_000, 31, (3, 15), 90, GPUS
    ),
    Persona("claude-sonnet-4-5", "cursor-agent", "", 0.60, 0.63, 27_000, 27, (3, 15), 80, GPUS),
    Persona("gpt-5", "codex-cli", "high", 0.76, 0.77, 71_000, 36, (1.25, 10), 120, ALL),
    Persona("gpt-5", "codex-cli", "medium", 0.67, 0.70, 39_000, 26, (1.25, 10), 120, GPUS),
    Persona("gpt-5-codex", "codex-cli", "high", 0.78, 0.79, 56_000, 34, (1.25, 10), 70, ALL),
    Persona("gpt-5", "cursor-agent", "", 0.61, 0.64, 31_000, 25, (1.25, 10), 100, GPUS, problems=2),
    Persona("gemini-2-5-pro", "gemini-cli", "", 0.55, 0.56, 36_000, 30, (1.25, 10), 120, GPUS),
    Persona("kimi-k2", "kimi-cli", "", 0.50, 0.50, 26_000, 37, (0.6, 2.5), 120, GPUS[:1]),
)


@dataclass(frozen=True)
class Cell:
    """One configuration on one problem and hardware target, with what its figures derive
    from: the hardware's roofs and the problem's FLOPs per byte."""

    persona: Persona
    problem: Problem
    hardware: HardwareTarget
    bandwidth_gbps: float
    peak_tflops: float
    intensity: float

    @property
    def device(self) -> str:
        return self.hardware.device


@dataclass
class Draft:
    run: Run
    gradings: list[tuple[Evaluation, EvaluationResult]] = field(default_factory=list)


@dataclass(frozen=True)
class SyntheticReport:
    removed: int
    runs: int
    evaluations: int
    shapes: int
    verdicts: dict[str, int]
    boards: list[str]  # hardware slugs whose board snapshot was recomputed


def synthetic_runs():
    return Run.objects.filter(metadata__demo=MARK)


def write_history(*, runs_per_cell: int = 4, seed: int = 10) -> SyntheticReport:
    """The demo's history: each configuration's runs on each problem and target it covers."""
    cells = _cells()
    runs = [_cell_runs(cell, runs_per_cell) for cell in cells]
    return _replace(
        cells=[cell for cell, n in zip(cells, runs, strict=True) for _ in range(n)], seed=seed
    )


def _cell_runs(cell: Cell, runs_per_cell: int) -> int:
    """The CPU target gets one run per cell: it is there to show unranked figures."""
    if cell.device == "cpu":
        return 1
    return max(1, round(runs_per_cell * cell.persona.volume))


def write_bench(*, runs: int, seed: int = 10) -> SyntheticReport:
    """``runs`` runs spread evenly over the configurations, problems and GPUs; one in fifty
    on the CPU target, a side show here as in the demo."""
    cells = _cells()
    gpu = [cell for cell in cells if cell.device == "cuda"]
    cpu = [cell for cell in cells if cell.device == "cpu"]
    few = runs // 50 if cpu else 0
    chosen = [cpu[n % len(cpu)] for n in range(few)] + [
        gpu[n % len(gpu)] for n in range(runs - few)
    ]
    return _replace(cells=chosen, seed=seed)


def remove_synthetic() -> int:
    """Deletes the synthetic runs, children first: no other row is read or touched."""
    return synthetic.remove_runs(runs=synthetic_runs())


def _replace(*, cells: list[Cell], seed: int) -> SyntheticReport:
    with transaction.atomic():
        removed = remove_synthetic()
        totals = Counter()
        for batch in _batches(_drafts(cells, seed=seed)):
            totals += synthetic.store_drafts(batch)
    slugs = sorted({cell.hardware.slug for cell in cells})
    for hardware in HardwareTarget.objects.filter(slug__in=slugs):
        snapshot.refresh_board(hardware_id=hardware.pk)
    verdicts = {k: v for k, v in totals.items() if k not in ("runs", "evaluations", "shapes")}
    return SyntheticReport(
        removed=removed,
        runs=totals["runs"],
        evaluations=totals["evaluations"],
        shapes=totals["shapes"],
        verdicts=dict(sorted(verdicts.items())),
        boards=slugs,
    )


def _cells() -> list[Cell]:
    seed_registry()
    problems = list(Problem.objects.filter(is_active=True).order_by("slug"))
    if not problems:
        raise LookupError("no active problem: run manage.py sync_problems first")
    targets = {hardware.slug: hardware for hardware in HardwareTarget.objects.all()}
    return [
        _cell(persona, problem, targets[slug])
        for persona in PERSONAS
        for slug in persona.targets
        for problem in problems[: persona.problems]
    ]


def _cell(persona: Persona, problem: Problem, hardware: HardwareTarget) -> Cell:
    table = engine_hardware.by_slug(hardware.gpu_model or hardware.slug)
    bandwidth = hardware.bandwidth_gbps or (table.bandwidth_gbps if table else 50.0)
    peaks = hardware.peak_tflops or (table.peak_tflops if table else {})
    peak = peaks.get(problem.peak_dtype) or peaks.get("fp32") or 1.0
    rng = random.Random(f"intensity:{problem.slug}")
    memory = problem.regime != "compute"
    # beyond the ridge point a compute-bound kernel sits under the compute roof, not above the
    # bandwidth roof
    ridge = peak * 1e3 / bandwidth
    intensity = rng.uniform(0.125, 1.25) if memory else ridge * rng.uniform(1.5, 4)
    return Cell(persona, problem, hardware, bandwidth, peak, intensity)


def _batches(drafts: Iterator[Draft]) -> Iterator[list[Draft]]:
    while batch := list(islice(drafts, BATCH)):
        yield batch


# -- runs ---------------------------------------------------------------------------------


def _drafts(cells: list[Cell], *, seed: int) -> Iterator[Draft]:
    registry = _registry()
    now = timezone.now().replace(microsecond=0)
    failures = 0
    for n, cell in enumerate(cells):
        rng = random.Random(f"{seed}:{n}")
        passes = rng.random() < cell.persona.reliability * _ease(cell.problem)
        verdict = V.OK if passes else FAILURE_CYCLE[failures % len(FAILURE_CYCLE)]
        failures += not passes
        yield _draft(cell, verdict, rng, key=f"{seed}:{n}", now=now, registry=registry)


def _registry() -> dict:
    return {
        "models": {m.slug: m for m in LanguageModel.objects.all()},
        "harnesses": {h.slug: h for h in Harness.objects.all()},
    }


def _ease(problem: Problem) -> float:
    """A problem's share of the configurations' reliability: some decks are harder."""
    return random.Random(f"ease:{problem.slug}").uniform(0.85, 1.0)


def _draft(cell: Cell, verdict: str, rng: random.Random, *, key, now, registry) -> Draft:
    persona = cell.persona
    created = now - timedelta(days=rng.uniform(0.5, persona.days), minutes=rng.randrange(1440))
    run = Run(
        problem=cell.problem,
        problem_version=cell.problem.version,
        language_model=registry["models"][persona.model],
        harness=registry["harnesses"][persona.harness],
        hardware=cell.hardware,
        effort=persona.effort,
        created_at=created,
        content_key=f"{MARK}-{key}"[:64],
        published=True,
        metadata={"demo": MARK, "note": NOTE, "harness_version": "synthetic"},
        cli_version="synthetic",
        transcript_status=Run.TranscriptStatus.FAILED,
        transcript_error="synthetic demo run: no transcript was recorded",
        **_figures(persona, rng, failed=verdict != V.OK),
    )
    draft = Draft(run=run)
    quality = _quality(cell, rng)
    draft.gradings.append(_grading(cell, verdict, quality, rng, at=created))
    if rng.random() < REGRADE_SHARE:
        again = _regrade_verdict(cell, verdict, rng)
        later = created + timedelta(days=rng.uniform(1, 20))
        draft.gradings.append(_grading(cell, again, quality, rng, at=min(later, now), regrade=True))
    return draft


def _figures(persona: Persona, rng: random.Random, *, failed: bool) -> dict:
    output = int(persona.output_tokens * rng.lognormvariate(0.25 if failed else 0, 0.35))
    fresh, cached = int(output * rng.uniform(1.5, 4)), int(output * rng.uniform(12, 40))
    price_in, price_out = persona.usd_per_mtok
    cost = (fresh * price_in + cached * price_in / 10 + output * price_out) / 1e6
    turns = max(3, int(persona.turns * rng.lognormvariate(0, 0.3)))
    figures = {
        "input_tokens": fresh,
        "cached_input_tokens": cached,
        "output_tokens": output,
        "reasoning_tokens": int(output * 0.4) if persona.effort else 0,
        "turns": turns,
        "wall_time_s": round(turns * rng.uniform(9, 24), 1),
        "cost_usd": round(cost, 4),
    }
    return figures | {"figure_sources": {name: MARK for name in figures}}


def _quality(cell: Cell, rng: random.Random) -> float:
    """The run's kernel: its peak fraction on large shapes."""
    scale = 0.97 if cell.hardware.slug == "h200" else 1.0
    return min(0.97, max(0.04, cell.persona.skill * scale * rng.lognormvariate(0, 0.18)))


def _regrade_verdict(cell: Cell, verdict: str, rng: random.Random) -> str:
    """A re-grade repeats the verdict; a grader failure is graded properly the second time."""
    if verdict != V.INFRA_ERROR:
        return verdict
    return V.OK if rng.random() < cell.persona.reliability else V.INCORRECT


# -- gradings -----------------------------------------------------------------------------


def _grading(cell, verdict, quality, rng, *, at: datetime, regrade: bool = False):
    started = at + timedelta(seconds=rng.uniform(5, 240))
    result = _result(cell, verdict, quality, rng)
    gave_up = verdict == V.INFRA_ERROR and rng.random() < 0.5
    evaluation = Evaluation(
        hardware=cell.hardware,
        status=Evaluation.Status.ERROR if gave_up else Evaluation.Status.DONE,
        verdict=verdict,
        reason=_gave_up_reason(cell) if gave_up else result.reason,
        score=None if gave_up else result.score,
        hidden_score=None if gave_up else result.hidden_score,
        **({} if gave_up else speedups(result.shapes)),
        correct_visible=None if gave_up else result.correct_visible,
        correct_hidden=None if gave_up else result.correct_hidden,
        **({} if gave_up else starter_columns(result)),
        result={} if gave_up else result.to_dict(),
        environment=result.environment,
        engine_version=MARK,
        trigger=Evaluation.Trigger.REEVALUATE if regrade else Evaluation.Trigger.UPLOAD,
        created_at=at,
        started_at=started,
        finished_at=started + timedelta(seconds=result.cost["total_s"]),
        worker_host=f"{MARK}-{cell.hardware.slug}",
        attempts=3 if gave_up else 1,
    )
    return evaluation, replace(result, shapes=[]) if gave_up else result


def _gave_up_reason(cell: Cell) -> str:
    return (
        f"gave up after 3 attempts; last: worker {MARK}-{cell.hardware.slug} stopped heartbeating"
    )


def _result(cell: Cell, verdict: str, quality: float, rng: random.Random) -> EvaluationResult:
    shapes = [] if FAIL_GATE[verdict] == "static" or verdict == V.MISSING_SOLUTION else _plan(cell)
    reason, details = OUTCOMES[verdict](cell, shapes, quality, rng)
    result = EvaluationResult(
        problem=cell.problem.slug,
        problem_version=cell.problem.version,
        device=cell.device,
        verdict=verdict,
        reason=reason,
        timings_comparable=cell.device == "cuda",
        gates=_gates(verdict, reason, details),
        shapes=shapes,
        environment=_environment(cell),
        engine_version=MARK,
        cost={"total_s": round(rng.uniform(40, 400), 1)},
    )
    _finish(result)
    compare_with_starter(cell.problem, result)
    return result


def _gates(verdict: str, reason: str, details: dict) -> list[GateResult]:
    """Gates pass up to the failing one; those after it are skipped (all of them when there
    was no solution to check)."""
    gates: list[GateResult] = []
    for name in GATE_NAMES:
        if verdict == V.MISSING_SOLUTION or (gates and gates[-1].status != "pass"):
            gates.append(GateResult(name, "skip", reason="an earlier gate failed"))
        elif name == FAIL_GATE[verdict]:
            # the result's reason is "gate: reason", the gate's own the part after the name
            gate_reason = reason.split(": ", 1)[-1]
            gates.append(GateResult(name, "fail", verdict, gate_reason, details=details))
        else:
            gates.append(GateResult(name, "pass", reason=PASS_REASONS[name]))
    return gates


def _finish(result: EvaluationResult) -> None:
    """Flags and scores as the engine derives them from the gates and the shapes."""
    passed = {gate.name for gate in result.gates if gate.status == "pass"}
    result.correct_visible = "correct_visible" in passed
    result.correct_hidden = "correct_hidden" in passed
    if result.verdict != V.OK:
        result.score, result.hidden_score = 0.0, 0.0
        return
    front = _front(result.shapes)
    scored = [shape for shape in _held_out(result.shapes) if shape.scored]
    figures = scoring.run_aggregates(
        result.shapes, front=front[0].set, ok=True, by_speedup=False
    )  # the engine's rule
    result.score, result.hidden_score = figures.score, figures.hidden_score
    result.gate("score").reason = _score_reason(result, front, scored)


def _score_reason(result: EvaluationResult, front: list, scored: list) -> str:
    reason = f"geomean of {len(front)} {front[0].set} peak fractions"
    if result.device == "cpu":
        return reason + " against the declared CPU roofline (not comparable, never ranked)"
    held_out = len(_held_out(result.shapes))
    return reason + f"; held-out: {len(scored)} of {held_out} in the same regime"


def _environment(cell: Cell) -> dict:
    gpu = cell.hardware.name if cell.device == "cuda" else ""
    return {
        "synthetic": True,
        "gpu": gpu,
        "hardware": cell.hardware.gpu_model or None,
        "torch": "2.13.0",
        "triton": "3.5.0",
        "python": "3.12.8",
        "hostname": f"{MARK}-{cell.hardware.slug}",
    }


# -- shapes -------------------------------------------------------------------------------


def _plan(cell: Cell) -> list[ShapeResult]:
    """The shapes the engine would grade: visible (smoke on CPU) and held-out cases. The
    held-out sizes are invented here: the real ones never leave the engine's deck."""
    visible = _visible_params(cell.problem)
    if cell.device == "cpu":
        front = [ShapeResult("smoke", n, p) for n, p in enumerate(_smoke_params(visible))]
    else:
        front = [ShapeResult("visible", n, p) for n, p in enumerate(visible)]
    cases = [HIDDEN_CASES[n % len(HIDDEN_CASES)] for n in range(cell.problem.hidden_count)]
    hidden = [
        ShapeResult("hidden", n, _hidden_params(visible, case, n), case=case)
        for n, case in enumerate(cases)
    ]
    if cell.device == "cpu":
        hidden = sorted(hidden, key=lambda shape: max(shape.params.values()))[:1]
    return front + hidden


def _visible_params(problem: Problem) -> list[dict]:
    if problem.visible_shapes:
        return [dict(params) for params in problem.visible_shapes]
    sizes = [(8192, 1024), (8192, 4096), (32768, 1024), (16384, 8192)]
    return [{"rows": r, "cols": c} for r, c in sizes[: max(1, problem.visible_count)]]


def _smoke_params(visible: list[dict]) -> list[dict]:
    names = list(visible[0])
    return [
        {name: first if k == 0 else rest for k, name in enumerate(names)}
        for first, rest in ((4, 33), (16, 100))
    ]


def _hidden_params(visible: list[dict], case: str, n: int) -> dict:
    largest = {name: max(params[name] for params in visible) for name in visible[0]}
    names = list(largest)
    if case == "edge":
        small = 1 if n % 2 == 0 else 61
        return {
            name: (small if k == 0 else largest[name] if n % 2 == 0 else 1)
            for k, name in enumerate(names)
        }
    if case == "scale-up":
        return {name: size * 2 for name, size in largest.items()}
    if case == "scale-down":
        return {name: max(32, size // 64) for name, size in largest.items()}
    return {name: size // (3 + n) | 1 for name, size in largest.items()}  # odd sizes


def _work(cell: Cell, params: dict) -> tuple[float, float]:
    """(FLOPs, bytes) of one shape: each element read and written once."""
    elements = math.prod(params.values())
    nbytes = 2 * DTYPE_BYTES.get(cell.problem.peak_dtype, 4) * elements
    return nbytes * cell.intensity, nbytes


def _speed(cell: Cell, params: dict, quality: float) -> float:
    """The peak fraction a kernel of this quality reaches on a shape of this size."""
    _, nbytes = _work(cell, params)
    return max(1e-4, quality * min(1.0, (nbytes / FULL_SPEED_BYTES) ** 0.35))


def _floor_s(cell: Cell, params: dict) -> float:
    """The shape's speed-of-light time on the target."""
    return _seconds(cell, params, 1.0)


def _seconds(cell: Cell, params: dict, fraction: float, *, overhead_s: float = 0.0) -> float:
    """A call reaching ``fraction`` of the roofline, plus a fixed cost per call."""
    flops, nbytes = _work(cell, params)
    if cell.problem.regime == "compute":
        return flops / (fraction * cell.peak_tflops * 1e12) + overhead_s
    return nbytes / (fraction * cell.bandwidth_gbps * 1e9) + overhead_s


def _time(cell: Cell, shape: ShapeResult, fraction: float, rng: random.Random) -> None:
    """Fills the timing of a shape run at ``fraction`` of the roofline, and what follows. No
    kernel beats the roofline, whatever the noise drawn for it."""
    fraction = min(fraction, MAX_FRACTION)
    flops, nbytes = _work(cell, shape.params)
    if cell.device == "cpu":
        overhead = CPU_CALL_S * rng.uniform(0.3, 3)
    else:
        overhead = GPU_CALL_S * rng.uniform(1, 1.5)
    seconds = _seconds(cell, shape.params, fraction, overhead_s=overhead)
    shape.time = _stats(seconds * 1e6, rng)
    shape.tflops = flops / seconds / 1e12
    shape.gbps = nbytes / seconds / 1e9
    shape.peak_fraction = _floor_s(cell, shape.params) / seconds


def _stats(median_us: float, rng: random.Random) -> TimingStats:
    spread = rng.uniform(0.005, 0.03)
    return TimingStats(
        median_us=median_us,
        mean_us=median_us * (1 + spread / 3),
        std_us=median_us * spread,
        min_us=median_us * (1 - spread),
        p10_us=median_us * (1 - spread / 2),
        p90_us=median_us * (1 + spread),
        n=rng.randrange(20, 400),
        rounds=3 if median_us < 200 else 1,
    )


def _baselines(cell: Cell, shape: ShapeResult, rng: random.Random) -> None:
    """The references, the same for every run of a shape give or take the noise: eager,
    torch.compile, the library's implementation and the starter where the problem has them
    (eager only on the CPU)."""
    fixed = random.Random(
        f"baseline:{cell.problem.slug}:{cell.hardware.slug}:{shape.set}{shape.index}"
    )
    eager = fixed.uniform(0.25, 0.55)
    fractions = {
        "eager": eager,
        "compile": min(0.9, eager * fixed.uniform(1.3, 1.9)),
        "library": fixed.uniform(0.6, 0.92) if has_library(cell.problem) else None,
        "starter": eager * fixed.uniform(0.5, 1.2) if has_starter(cell.problem) else None,
    }
    for kind in BASELINES[cell.device]:
        if fractions[kind] is None:
            continue
        fraction = _speed(cell, shape.params, fractions[kind]) * rng.uniform(0.98, 1.02)
        overhead = EAGER_CALL_S if cell.device == "cpu" else EAGER_GPU_CALL_S
        stats = _stats(_seconds(cell, shape.params, fraction, overhead_s=overhead) * 1e6, rng)
        setattr(shape, f"baseline_{kind}", stats)
        setattr(shape, f"speedup_{kind}", stats.median_us / shape.time.median_us)


def _label(shape: ShapeResult) -> str:
    """How the engine names a shape in its reasons; held-out sizes never appear."""
    if shape.set == "hidden":
        return f"held-out case {shape.index + 1}"
    return f"{shape.set} shape {shape.index} {shape.params}"


def _front(shapes: list[ShapeResult]) -> list[ShapeResult]:
    return [shape for shape in shapes if shape.set != "hidden"]


def _held_out(shapes: list[ShapeResult]) -> list[ShapeResult]:
    return [shape for shape in shapes if shape.set == "hidden"]


def _timed(cell: Cell, shapes: list[ShapeResult]) -> list[ShapeResult]:
    return _front(shapes) if cell.device == "cpu" else shapes


def _match(shapes: list[ShapeResult], rng: random.Random) -> None:
    for shape in shapes:
        shape.correct, shape.mismatches = True, 0
        shape.max_abs_err = 10 ** rng.uniform(-8, -4)
        shape.max_rel_err = 10 ** rng.uniform(-7, -4)


def _mismatch(shape: ShapeResult, rng: random.Random) -> None:
    shape.correct = False
    shape.mismatches = rng.randrange(1, math.prod(shape.params.values()) + 1)
    shape.max_abs_err, shape.max_rel_err = rng.uniform(0.05, 4), rng.uniform(0.01, 1)
    shape.worst_index = [rng.randrange(size) for size in shape.params.values()]
    shape.error = f"output 0: {shape.mismatches} element(s) outside atol+rtol"


def _wrong(shapes: list[ShapeResult], gate: str, rng: random.Random) -> tuple[str, dict]:
    _match(shapes, rng)
    wrong = rng.sample(shapes, rng.randint(1, len(shapes)))
    for shape in wrong:
        _mismatch(shape, rng)
    first = min(wrong, key=lambda shape: shape.index)
    detail = "" if first.set == "hidden" else f": {first.error}"
    reason = f"{len(wrong)} of {len(shapes)} shape(s) wrong; first {_label(first)}{detail}"
    return f"{gate}: {reason}", {"shapes": len(shapes), "seeds_per_shape": 3}


def _run_all(cell: Cell, shapes: list[ShapeResult], quality: float, rng: random.Random) -> None:
    """Correct everywhere, timed, and compared with the reference baselines."""
    _match(shapes, rng)
    for shape in _timed(cell, shapes):
        _time(cell, shape, _speed(cell, shape.params, quality * rng.lognormvariate(0, 0.05)), rng)
        _baselines(cell, shape, rng)
    _mark_scored(cell, shapes)


def _mark_scored(cell: Cell, shapes: list[ShapeResult]) -> None:
    """Visible shapes count toward the score; held-out ones toward the held-out score when sized
    like the visible ones (the engine's rule; the CPU times no held-out shape)."""
    floors = [_floor_s(cell, shape.params) for shape in _front(shapes)]
    for shape in _front(shapes):
        shape.scored = True
    for shape in _held_out(shapes) if cell.device == "cuda" else []:
        in_regime = scoring.in_visible_regime(_floor_s(cell, shape.params), floors)
        shape.scored = in_regime and shape.time.median_us >= scoring.MIN_SCORED_US


def _passed(cell, shapes, quality, rng) -> tuple[str, dict]:
    _run_all(cell, shapes, quality, rng)
    if cell.device == "cpu":
        return "all gates passed (CPU: timings not comparable)", {}
    return "all gates passed", {}


def _missing(cell, shapes, quality, rng) -> tuple[str, dict]:
    return "no solution file at solution.py", {}


def _syntax(cell, shapes, quality, rng) -> tuple[str, dict]:
    line = rng.randrange(8, 160)
    message = rng.choice(("invalid syntax", "unexpected indent", "'(' was never closed"))
    hits = [{"rule": "syntax", "line": line, "message": message}]
    return f"static: line {line}: {message}", {"hits": hits}


def _forbidden(cell, shapes, quality, rng) -> tuple[str, dict]:
    rule, message = rng.choice(
        (
            ("introspection", "uses sys._getframe"),
            ("dynamic_code", "calls builtins.exec"),
            ("encoded_payload", "calls base64.b64decode"),
            ("patching", "uses __code__"),
        )
    )
    line = rng.randrange(5, 120)
    hits = [{"rule": rule, "line": line, "message": message}]
    return f"static: line {line}: {message} [{rule}]", {"hits": hits}


def _build_error(cell, shapes, quality, rng) -> tuple[str, dict]:
    error = rng.choice(
        (
            "ImportError: cannot import name 'fused_kernel' from 'solution'",
            "CompilationError: at 14:8: unsupported tensor index",
            "RuntimeError: Error(s) in loading state_dict for ModelNew: missing key 'weight'",
        )
    )
    return f"build: {_label(shapes[0])}: {error}", {}


def _infra(cell, shapes, quality, rng) -> tuple[str, dict]:
    return "build: reference process: CUDA error: out of memory (another job on the GPU)", {}


def _runtime_error(cell, shapes, quality, rng) -> tuple[str, dict]:
    front = _front(shapes)
    failing = rng.randrange(len(front))
    _match(front[:failing], rng)
    error = "RuntimeError: CUDA error: an illegal memory access was encountered"
    return f"correct_visible: {_label(front[failing])}: {error}", {}


def _resource_limit(cell, shapes, quality, rng) -> tuple[str, dict]:
    front = _front(shapes)
    _match(front[:-1], rng)
    error = "MemoryError: the candidate passed its memory limit"
    return f"correct_visible: {_label(front[-1])}: {error}", {}


def _incorrect(cell, shapes, quality, rng) -> tuple[str, dict]:
    return _wrong(_front(shapes), "correct_visible", rng)


def _incorrect_hidden(cell, shapes, quality, rng) -> tuple[str, dict]:
    _match(_front(shapes), rng)
    return _wrong(_held_out(shapes), "correct_hidden", rng)


def _crashed(cell, shapes, quality, rng) -> tuple[str, dict]:
    _match(_front(shapes), rng)
    hidden = _held_out(shapes)
    _match(hidden[:-1], rng)
    signal = rng.choice(("SIGSEGV", "SIGABRT", "SIGBUS"))
    return f"correct_hidden: {_label(hidden[-1])}: the process was killed by {signal}", {}


def _timeout(cell, shapes, quality, rng) -> tuple[str, dict]:
    _match(shapes, rng)
    timed = _timed(cell, shapes)
    failing = rng.randrange(len(timed))
    for shape in timed[:failing]:
        _time(cell, shape, _speed(cell, shape.params, quality * 0.2), rng)
    message = "no answer within 32 s (wall clock); the process tree was killed"
    return f"performance: {_label(timed[failing])}: {message}", {}


def _timing_rejected(cell, shapes, quality, rng) -> tuple[str, dict]:
    _match(shapes, rng)
    for shape in _front(shapes):
        _time(cell, shape, _speed(cell, shape.params, min(0.99, quality * 1.6)), rng)
    timed = _front(shapes)[-1]
    problem = "device work continued after the call returned (side streams?)"
    return f"performance: {_label(timed)}: {problem}", {"problems": [problem]}


OUTCOMES = {
    V.OK: _passed,
    V.MISSING_SOLUTION: _missing,
    V.SYNTAX_ERROR: _syntax,
    V.FORBIDDEN: _forbidden,
    V.BUILD_ERROR: _build_error,
    V.INFRA_ERROR: _infra,
    V.RUNTIME_ERROR: _runtime_error,
    V.RESOURCE_LIMIT: _resource_limit,
    V.INCORRECT: _incorrect,
    V.INCORRECT_HIDDEN: _incorrect_hidden,
    V.CRASHED: _crashed,
    V.TIMEOUT: _timeout,
    V.TIMING_REJECTED: _timing_rejected,
}


# -- references: what the history knows of a problem beyond the registry ------------------------
# The engine's built-in deck, read as files: the platform imports no engine module but the schema.
DECK = Path(schema.__file__).parent / "problems"
# The share of held-out shapes a naive starter gets wrong (a case it never handled).
STARTER_MISS = 0.08


@functools.cache
def _deck_has_library(slug: str) -> bool:
    reference = DECK / slug / "reference.py"
    # The engine times reference.Library where the reference module defines one.
    return reference.is_file() and "class Library" in reference.read_text(encoding="utf-8")


def has_library(problem: Problem) -> bool:
    """Whether the deck's problem of that name has a library implementation (cuBLAS, SDPA...)."""
    return _deck_has_library(problem.slug)


def has_starter(problem: Problem) -> bool:
    """Kernel-to-kernel problems hand the agent a starter kernel; the others have none."""
    return problem.category != Problem.Category.PYTORCH_TO_KERNEL


def compare_with_starter(problem: Problem, result: EvaluationResult) -> None:
    """Marks the starter's correctness on each held-out shape the grading checked, and the
    run's quadrant against it; nothing when the problem has no starter or the held-out gate
    never ran. The starter's misses are fixed per problem and shape, as a real starter's are."""
    gate = result.gate("correct_hidden")
    if not has_starter(problem) or gate is None or gate.status == "skip":
        return
    checked = [s for s in result.shapes if s.set == "hidden" and s.correct is not None]
    for shape in checked:
        miss = random.Random(f"starter:{problem.slug}:{shape.index}").random() < STARTER_MISS
        shape.starter_correct = not miss
    result.starter = _comparison(result, checked)


def _comparison(result: EvaluationResult, checked: list) -> StarterComparison:
    starter_passes = all(shape.starter_correct for shape in checked)
    run_passes = result.correct_hidden
    quadrant = {
        (True, True): "both_pass",
        (True, False): "regression",
        (False, True): "improvement",
        (False, False): "both_fail",
    }[starter_passes, run_passes]
    kept = [shape.correct for shape in checked if shape.starter_correct]
    return StarterComparison(
        starter_hidden_correct=starter_passes,
        quadrant=quadrant,
        conditional_hidden_correct=sum(kept) / len(kept) if kept else None,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-per-cell", type=int, default=4, help="per config, problem, GPU")
    parser.add_argument("--runs", type=int, help="this many runs instead (the bench database)")
    parser.add_argument("--seed", type=int, default=10)
    args = parser.parse_args()
    started = time.perf_counter()
    try:
        if args.runs:
            report = write_bench(runs=args.runs, seed=args.seed)
        else:
            report = write_history(runs_per_cell=args.runs_per_cell, seed=args.seed)
    except LookupError as error:
        raise SystemExit(str(error)) from None
    print(describe(report) + f" in {time.perf_counter() - started:.1f} s")
    return 0


def describe(report: SyntheticReport) -> str:
    verdicts = ", ".join(f"{k} {v}" for k, v in report.verdicts.items())
    return (
        f"synthetic history: {report.runs} runs, {report.evaluations} evaluations, "
        f"{report.shapes} shape results (replaced {report.removed} runs); boards refreshed: "
        f"{', '.join(report.boards)}; verdicts: {verdicts}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
