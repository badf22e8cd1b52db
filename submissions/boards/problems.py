"""The problem page: ranked runs of one problem on one hardware target, their score
distribution, visible against held-out outcomes per configuration, and the roofline."""

import datetime
from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean, median

from submissions.boards.configs import (
    CONFIG_VALUES,
    OUTCOME_VALUES,
    ConfigRef,
    config_fields,
    graded_runs,
    run_score,
)
from submissions.models import Evaluation, HardwareTarget, Problem, Run, ShapeResult

HISTOGRAM_BINS = 20
# The roofline plots the visible shapes of this many best runs (those a page lists): a busy
# problem has thousands of runs, whose points would bury the chart and slow the page.
ROOFLINE_RUNS = 100
# Timings the engine refused to trust are not plotted as throughput.
UNTIMED_VERDICTS = (Evaluation.Verdict.TIMING_REJECTED,)


@dataclass(frozen=True)
class RankedRun(ConfigRef):
    rank: int  # competition ranking: equal scores share a rank
    run_uuid: str
    score: float
    hidden_score: float | None
    verdict: str
    correct_visible: bool | None
    correct_hidden: bool | None
    created_at: datetime.datetime
    synthetic: bool  # synthetic data from bench/synthetic_history.py


@dataclass(frozen=True)
class Disagreement:
    """A run another benchmark published whose verdict there differs from ours (Run.source_result,
    manage.py import_runs): theirs, ours, and our reason."""

    run_uuid: str
    config_label: str
    source: str
    theirs: str  # "correct" or "not correct (why)"
    verdict: str  # ours
    reason: str  # our headline evaluation's reason


@dataclass(frozen=True)
class HistogramBin:
    low: float
    high: float
    count: int


@dataclass(frozen=True)
class ScoreDistribution:
    scores: list[float]
    bins: list[HistogramBin]
    median: float | None
    mean: float | None


@dataclass(frozen=True)
class ConfigOutcome:
    """How one configuration's runs fared on visible and on held-out shapes."""

    config_key: str
    config_label: str
    runs: int
    both: int
    visible_only: int
    hidden_only: int
    neither: int


@dataclass(frozen=True)
class RooflinePoint:
    intensity: float  # FLOP per byte
    tflops: float
    label: str
    run_uuid: str | None
    kind: str  # run, or a REFERENCE_COLUMNS kind


@dataclass(frozen=True)
class Roofline:
    peak_tflops: float | None
    bandwidth_gbps: float | None
    points: list[RooflinePoint]

    @property
    def library(self) -> bool:
        return any(point.kind == "library" for point in self.points)

    @property
    def starter(self) -> bool:
        return any(point.kind == "starter" for point in self.points)

    @property
    def ridge_intensity(self) -> float | None:
        """Where the bandwidth roof meets the compute roof, in FLOP per byte."""
        if not self.peak_tflops or not self.bandwidth_gbps:
            return None
        return self.peak_tflops * 1e12 / (self.bandwidth_gbps * 1e9)


@dataclass(frozen=True)
class ProblemPage:
    problem: Problem
    hardware: HardwareTarget
    runs: list[RankedRun]
    distribution: ScoreDistribution
    outcomes: list[ConfigOutcome]
    roofline: Roofline
    disagreements: list[Disagreement]


def problem_page(*, problem: Problem, hardware: HardwareTarget) -> ProblemPage:
    """Two queries whatever the number of runs: the runs, then their visible shapes."""
    rows = _ranked_rows(problem=problem, hardware=hardware)
    runs = _ranked_runs(rows)
    return ProblemPage(
        problem=problem,
        hardware=hardware,
        runs=runs,
        distribution=_distribution([run.score for run in runs]),
        outcomes=_outcomes(rows),
        roofline=_roofline(problem=problem, hardware=hardware, rows=rows),
        disagreements=_disagreements(rows),
    )


def run_rank(*, run: Run) -> tuple[int, int] | None:
    """(rank on its problem and hardware, of how many); None for a run that is not ranked:
    unpublished, not graded yet, or failed by the grader itself."""
    if not run.published or run.headline_evaluation_id is None:
        return None
    rows = _ranked_rows(problem=run.problem_id, hardware=run.hardware_id, values=("pk",))
    position = next((n for n, row in enumerate(rows) if row["pk"] == run.pk), None)
    if position is None:
        return None
    return _ranks([run_score(row) for row in rows])[position], len(rows)


def _ranked_rows(*, problem, hardware, values: tuple[str, ...] | None = None) -> list[dict]:
    columns = values or (
        "uuid",
        "created_at",
        "metadata__demo",
        "headline_evaluation_id",
        "headline_evaluation__reason",
        "source_result",
        *CONFIG_VALUES,
    )
    runs = graded_runs().filter(problem=problem, hardware=hardware)
    rows = list(runs.order_by("created_at", "pk").values(*columns, *OUTCOME_VALUES))
    rows.sort(key=run_score, reverse=True)  # stable: the earlier run first among equals
    return rows


def _ranks(scores: list[float]) -> list[int]:
    """Competition ranks of scores sorted best first: 1, 2, 2, 4."""
    ranks: list[int] = []
    for n, score in enumerate(scores):
        ranks.append(ranks[-1] if n and score == scores[n - 1] else n + 1)
    return ranks


def _ranked_runs(rows: list[dict]) -> list[RankedRun]:
    ranks = _ranks([run_score(row) for row in rows])
    return [_ranked_run(rank, row) for rank, row in zip(ranks, rows, strict=True)]


def _ranked_run(rank: int, row: dict) -> RankedRun:
    return RankedRun(
        rank=rank,
        run_uuid=str(row["uuid"]),
        **config_fields(row),
        score=run_score(row),
        hidden_score=row["headline_evaluation__hidden_score"],
        verdict=row["headline_evaluation__verdict"],
        correct_visible=row["headline_evaluation__correct_visible"],
        correct_hidden=row["headline_evaluation__correct_hidden"],
        created_at=row["created_at"],
        synthetic=row["metadata__demo"] == "synthetic",
    )


def _disagreements(rows: list[dict]) -> list[Disagreement]:
    """The imported runs whose source judged them otherwise than we did, in rank order."""
    found = []
    for row in rows:
        source = row["source_result"] or {}
        ours_ok = row["headline_evaluation__verdict"] == Evaluation.Verdict.OK
        if not source or bool(source.get("correct")) == ours_ok:
            continue
        why = source.get("failure_reason")
        theirs = "correct" if source.get("correct") else f"not correct ({why})" if why else ""
        found.append(
            Disagreement(
                run_uuid=str(row["uuid"]),
                config_label=config_fields(row)["config_label"],
                source=source.get("source", ""),
                theirs=theirs or "not correct",
                verdict=row["headline_evaluation__verdict"],
                reason=row["headline_evaluation__reason"] or "",
            )
        )
    return found


def _distribution(scores: list[float]) -> ScoreDistribution:
    return ScoreDistribution(
        scores=scores,
        bins=_histogram(scores),
        median=median(scores) if scores else None,
        mean=fmean(scores) if scores else None,
    )


def _histogram(scores: list[float]) -> list[HistogramBin]:
    """Equal bins from 0 to 1 (or to the best score, if above 1); the last bin is closed."""
    top = max([1.0, *scores])
    width = top / HISTOGRAM_BINS
    counts = [0] * HISTOGRAM_BINS
    for score in scores:
        counts[min(int(score / width), HISTOGRAM_BINS - 1)] += 1
    return [HistogramBin(n * width, (n + 1) * width, count) for n, count in enumerate(counts)]


def _outcomes(rows: list[dict]) -> list[ConfigOutcome]:
    grouped: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        grouped[config_fields(row)["config_key"]].append(row)
    outcomes = [_outcome(group) for group in grouped.values()]
    return sorted(outcomes, key=lambda outcome: (-outcome.runs, outcome.config_label))


def _outcome(rows: list[dict]) -> ConfigOutcome:
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for row in rows:
        visible = bool(row["headline_evaluation__correct_visible"])
        counts[visible, bool(row["headline_evaluation__correct_hidden"])] += 1
    fields = config_fields(rows[0])
    return ConfigOutcome(
        config_key=fields["config_key"],
        config_label=fields["config_label"],
        runs=len(rows),
        both=counts[True, True],
        visible_only=counts[True, False],
        hidden_only=counts[False, True],
        neither=counts[False, False],
    )


def _roofline(*, problem: Problem, hardware: HardwareTarget, rows: list[dict]) -> Roofline:
    shapes = _front_shapes(rows[:ROOFLINE_RUNS])
    runs = {row["headline_evaluation_id"]: row for row in rows}
    labels = _shape_labels(problem)
    points = [_run_point(shape, runs[shape["evaluation_id"]], labels) for shape in shapes]
    return Roofline(
        peak_tflops=(hardware.peak_tflops or {}).get(problem.peak_dtype),
        bandwidth_gbps=hardware.bandwidth_gbps,
        points=points + _reference_points(shapes, labels),
    )


# The shapes a run is scored on: the visible ones, which smoke shapes stand for on the CPU.
FRONT_SETS = (ShapeResult.Set.VISIBLE, ShapeResult.Set.SMOKE)


def _front_shapes(rows: list[dict]) -> list[dict]:
    """Correct, timed visible (on the CPU, smoke) shapes of the runs' headline evaluations."""
    evaluations = [
        row["headline_evaluation_id"]
        for row in rows
        if row["headline_evaluation__verdict"] not in UNTIMED_VERDICTS
    ]
    shapes = ShapeResult.objects.filter(
        evaluation_id__in=evaluations, set__in=FRONT_SETS, correct=True, tflops__gt=0, gbps__gt=0
    )
    columns = ("evaluation_id", "set", "index", "tflops", "gbps")
    speedups = REFERENCE_COLUMNS.values()
    return list(shapes.order_by("evaluation_id", "index").values(*columns, *speedups))


def _intensity(shape: dict) -> float:
    # tflops and gbps share the measured time, so their ratio is the shape's FLOPs per byte.
    return shape["tflops"] * 1e12 / (shape["gbps"] * 1e9)


def _shape_labels(problem: Problem) -> dict[tuple[str, int], str]:
    labels = {}
    for index, params in enumerate(problem.visible_shapes or []):
        sizes = ", ".join(f"{name}={value}" for name, value in params.items())
        labels[ShapeResult.Set.VISIBLE, index] = f"visible {index + 1} ({sizes})"
    return labels


def _shape_label(labels: dict[tuple[str, int], str], shape_set: str, index: int) -> str:
    return labels.get((shape_set, index), f"{shape_set} {index + 1}")


def _run_point(shape: dict, row: dict, labels: dict) -> RooflinePoint:
    where = _shape_label(labels, shape["set"], shape["index"])
    return RooflinePoint(
        intensity=_intensity(shape),
        tflops=shape["tflops"],
        label=f"{config_fields(row)['config_label']} · {where}",
        run_uuid=str(row["uuid"]),
        kind="run",
    )


# The references a roofline draws per shape, and the speedup column each is derived from.
REFERENCE_COLUMNS = {
    "eager": "speedup_eager",
    "compile": "speedup_compile",
    "library": "speedup_library",
    "starter": "speedup_starter",
}
REFERENCE_NAMES = {"eager": "eager", "compile": "torch.compile", "library": "library"}


def _reference_points(shapes: list[dict], labels: dict) -> list[RooflinePoint]:
    """The references per shape (eager, torch.compile, the library's implementation and a
    kernel-to-kernel problem's starter where measured), at the shape's intensity: each plotted
    run measured them beside its own kernel (tflops / speedup); the median over those runs."""
    by_shape: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for shape in shapes:
        by_shape[shape["set"], shape["index"]].append(shape)
    points = []
    for (shape_set, index), group in sorted(by_shape.items()):
        label = _shape_label(labels, shape_set, index)
        for kind, column in REFERENCE_COLUMNS.items():
            point = _reference_point(group, kind, column, label)
            points += [point] if point else []
    return points


def _reference_point(group: list[dict], kind: str, column: str, label: str) -> RooflinePoint | None:
    timed = [shape for shape in group if shape[column]]
    if not timed:
        return None
    return RooflinePoint(
        intensity=median(_intensity(shape) for shape in timed),
        tflops=median(shape["tflops"] / shape[column] for shape in timed),
        label=f"{REFERENCE_NAMES.get(kind, kind)} · {label}",
        run_uuid=None,
        kind=kind,
    )
