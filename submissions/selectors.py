"""Reads that feed pages and the API.

Hidden shapes are redacted here, in one place: public readers get "held-out case k" with the
outcome and timings, never the parameters.
"""

import json
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, field, make_dataclass
from typing import Any

from django.conf import settings
from django.db.models import OuterRef, Prefetch, Q, QuerySet, Subquery
from django.shortcuts import get_object_or_404

from runners.contract import EvaluationResult, GateResult
from submissions.models import (
    Annotation,
    Evaluation,
    HardwareTarget,
    Harness,
    LanguageModel,
    LineageVersion,
    Problem,
    RetiredProblemVersion,
    Run,
    ShapeResult,
)
from submissions.models.evaluations import SHAPE_MEASURES

HIDDEN_GATE_NAMES = ("correct_hidden",)


def recent_published_runs(*, limit: int = 50) -> QuerySet[Run]:
    return published_runs_listing()[:limit]


def published_runs_listing() -> QuerySet[Run]:
    """Published runs, newest first, with what a list row shows (headline included)."""
    related = ("problem", "language_model", "harness", "hardware", "headline_evaluation__hardware")
    return Run.objects.published().select_related(*related).order_by("-created_at", "-pk")


def runs_in_grading() -> int:
    """How many runs, published or not, are received, queued or being graded now (the runs page
    says so: they appear there once graded)."""
    waiting = (Run.Status.RECEIVED, Run.Status.QUEUED, Run.Status.EVALUATING)
    return Run.objects.filter(status__in=waiting).count()


def run_filter_choices() -> dict[str, list[tuple[str, str]]]:
    """(value, label) of each filter the runs page offers: the problems, models, harnesses and
    hardware that have a published run, and every verdict (four queries)."""
    published = Run.objects.published()
    return {
        "problem": _pairs(Problem, "slug", "title", published, "problem"),
        "model": _pairs(LanguageModel, "slug", "display_name", published, "language_model"),
        "harness": _pairs(Harness, "slug", "name", published, "harness"),
        "hardware": _pairs(HardwareTarget, "slug", "name", published, "hardware"),
        "verdict": list(Evaluation.Verdict.choices),
    }


def _pairs(model, value: str, label: str, runs: QuerySet[Run], field: str) -> list[tuple]:
    used = model.objects.filter(pk__in=runs.values(field)).order_by(label)
    return list(used.values_list(value, label))


def review_queue() -> QuerySet[Run]:
    """What staff should look at, oldest first: flagged runs no one has annotated, and graded
    runs held for review (``ARENA_PUBLISH_ON_GRADE`` off) that are not published yet."""
    held = Q(published=False, status=Run.Status.EVALUATED)
    if settings.ARENA_PUBLISH_ON_GRADE:
        held = Q(pk__in=[])  # unpublished then means withdrawn by staff, already reviewed
    waiting = Run.objects.filter(annotations__isnull=True, invalidated_at__isnull=True)
    related = ("problem", "language_model", "harness", "hardware", "headline_evaluation__hardware")
    return waiting.filter(~Q(flags=[]) | held).select_related(*related).order_by("created_at", "pk")


def run_detail_queryset() -> QuerySet[Run]:
    # the headline evaluation is one of the prefetched evaluations: see latest_evaluation.
    # Lineage gradings are not the run's history: lineage_curve reads them.
    evaluations = Evaluation.objects.counted().select_related("hardware").order_by("-created_at")
    retired = RetiredProblemVersion.objects.filter(
        problem=OuterRef("problem"), version=OuterRef("problem_version")
    )
    return (
        Run.objects.annotate(retired_version_note=Subquery(retired.values("note")[:1]))
        .select_related(
            "problem",
            "language_model",
            "harness",
            "hardware",
            "solution",
            "submitter",
            "campaign_launch__campaign",
        )
        .prefetch_related(
            "transcript_files",
            Prefetch("annotations", queryset=Annotation.objects.select_related("author")),
            Prefetch("evaluations", queryset=evaluations),
            "evaluations__shapes",
        )
    )


def run_for_viewer(*, run_id, user) -> Run:
    """The run with its files and evaluations; 404 for runs the user may not see."""
    return get_object_or_404(run_detail_queryset().visible_to(user), uuid=run_id)


def latest_evaluation(run: Run) -> Evaluation | None:
    """The run's headline evaluation (``Run.headline_evaluation``, kept by
    ``services.evaluations.refresh_run``), taken from the prefetched history."""
    if run.headline_evaluation_id is None:
        return None
    return next(e for e in run.evaluations.all() if e.pk == run.headline_evaluation_id)


PublicShape = make_dataclass(
    "PublicShape",
    [("label", str), ("set", str), ("params", dict | None)]
    + [(name, Any) for name in SHAPE_MEASURES],
)


@dataclass
class PublicGate:
    name: str
    status: str
    verdict: str | None
    reason: str
    duration_s: float
    details: dict[str, Any] = field(default_factory=dict)


SET_ORDER = {ShapeResult.Set.VISIBLE: 0, ShapeResult.Set.SMOKE: 1, ShapeResult.Set.HIDDEN: 2}


def public_shapes(evaluation: Evaluation) -> list[PublicShape]:
    """The evaluation's shapes as the public may see them; none before it is done."""
    if evaluation.status != Evaluation.Status.DONE:
        return []
    shapes = sorted(evaluation.shapes.all(), key=lambda s: (SET_ORDER.get(s.set, 3), s.index))
    return [_public_shape(shape) for shape in shapes]


def _public_shape(shape: ShapeResult) -> PublicShape:
    fields = {name: getattr(shape, name) for name in ("set", "index", "params", *SHAPE_MEASURES)}
    fields = redacted_shape(fields)
    del fields["index"]
    return PublicShape(**fields)


def shape_label(shape_set: str, index: int) -> str:
    if shape_set == ShapeResult.Set.HIDDEN:
        return f"held-out case {index + 1}"
    return f"{shape_set} {index + 1}"


# baseline_key spells out a shape's parameters; worst_index and error can hint at its sizes.
HIDDEN_SHAPE_REDACTIONS = {"params": None, "baseline_key": "", "worst_index": None, "error": ""}


def redacted_shape(shape: dict) -> dict:
    """The one place held-out parameters are removed, from a stored result's shape dict or a
    row's fields alike; every page, export and API response goes through it. Adds the label."""
    label = {"label": shape_label(shape["set"], shape["index"])}
    if shape["set"] != ShapeResult.Set.HIDDEN:
        return shape | label
    return shape | {k: v for k, v in HIDDEN_SHAPE_REDACTIONS.items() if k in shape} | label


def public_gates(evaluation: Evaluation) -> list[PublicGate]:
    """The gates of the stored result, with anything that could reveal a hidden shape removed."""
    if not evaluation.result:
        return []
    result = EvaluationResult.from_dict(evaluation.result)
    hidden = {
        _params_key(s.params): shape_label(s.set, s.index)
        for s in result.shapes
        if s.set == ShapeResult.Set.HIDDEN
    }
    return [_public_gate(gate, hidden) for gate in result.gates]


def _public_gate(gate: GateResult, hidden: dict[str, str]) -> PublicGate:
    details = {} if gate.name in HIDDEN_GATE_NAMES else _scrub(gate.details, hidden)
    return PublicGate(
        name=gate.name,
        status=gate.status,
        verdict=gate.verdict,
        reason=gate.reason,
        duration_s=gate.duration_s,
        details=details,
    )


def _scrub(value: Any, hidden: dict[str, str]) -> Any:
    """Gate details with each held-out shape's parameters replaced by its label."""
    if isinstance(value, dict):
        key = _params_key(value)
        if key in hidden:
            return hidden[key]
        return {k: _scrub(v, hidden) for k, v in value.items() if k != "hidden"}
    if isinstance(value, list):
        return [_scrub(item, hidden) for item in value]
    return value


def _params_key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, default=str)


GRADER_FAILURE_REASON = "The grader itself failed; maintainers see the details in the admin."


def public_reason(evaluation: Evaluation) -> str:
    """The grader's own failures quote the engine's stderr, which names held-out shapes."""
    if evaluation.status == Evaluation.Status.ERROR:
        return GRADER_FAILURE_REASON
    return evaluation.reason


@dataclass
class EvaluationReport:
    evaluation: Evaluation
    reason: str
    gates: list[PublicGate]
    shapes: list[PublicShape]

    @property
    def compares_library(self) -> bool:
        """Whether a column of speedups over the library's implementation has anything in it."""
        return any(shape.speedup_library is not None for shape in self.shapes)

    @property
    def compares_starter(self) -> bool:
        """Whether a column of speedups over a kernel-to-kernel problem's starter has anything."""
        return any(shape.speedup_starter is not None for shape in self.shapes)


def evaluation_reports(run: Run) -> list[EvaluationReport]:
    """Each evaluation of the run, newest first, as the public may see it."""
    return [
        EvaluationReport(
            evaluation,
            reason=public_reason(evaluation),
            gates=public_gates(evaluation),
            shapes=public_shapes(evaluation),
        )
        for evaluation in run.evaluations.all()
    ]


@dataclass
class TimingSpread:
    hardware: str
    label: str
    n: int
    median_us: float
    min_us: float
    max_us: float
    cv_pct: float


def timing_spread(run: Run) -> list[TimingSpread]:
    """Per hardware and shape, how the candidate's median time varied across the run's completed
    evaluations; only shapes timed in at least two of them."""
    samples: dict[tuple, list[float]] = defaultdict(list)
    for evaluation in run.evaluations.all():  # prefetched with their shapes
        if evaluation.status != Evaluation.Status.DONE:
            continue
        for shape in public_shapes(evaluation):
            if shape.median_us is not None:
                samples[
                    (evaluation.hardware.name, SET_ORDER.get(shape.set, 3), shape.label)
                ].append(shape.median_us)
    return [
        _spread(hardware, label, times)
        for (hardware, _, label), times in sorted(samples.items())
        if len(times) >= 2
    ]


def _spread(hardware: str, label: str, times: list[float]) -> TimingSpread:
    mean = statistics.fmean(times)
    return TimingSpread(
        hardware=hardware,
        label=label,
        n=len(times),
        median_us=statistics.median(times),
        min_us=min(times),
        max_us=max(times),
        cv_pct=100 * statistics.stdev(times) / mean if mean else 0.0,
    )


def public_result(evaluation: Evaluation) -> dict:
    """The stored result as the public may see it: held-out parameters removed."""
    result = dict(evaluation.result)
    result["gates"] = [asdict(gate) for gate in public_gates(evaluation)]
    result["shapes"] = [redacted_shape(shape) for shape in result.get("shapes", [])]
    return result


@dataclass
class CurvePoint:
    """One graded version of a run's lineage."""

    index: int
    turn: int
    output_tokens: int
    wall_s: float | None
    how: str
    verdict: str
    score: float | None
    best: float | None  # the best score of a correct version so far

    @property
    def correct(self) -> bool:
        return self.verdict == Evaluation.Verdict.OK


@dataclass
class LineageCurve:
    hardware: str
    points: list[CurvePoint]
    versions: int  # rebuilt versions, graded or not
    waiting: int  # sampled versions not graded yet

    @property
    def first_correct(self) -> CurvePoint | None:
        return next((point for point in self.points if point.correct), None)


def lineage_curve(run: Run) -> LineageCurve | None:
    """Score and best-so-far of the run's graded versions, in order, on the target of the
    latest lineage grading; None before any. Two queries, whatever the number of versions."""
    grades = list(_lineage_grades().filter(run=run))
    if not grades:
        return None
    hardware = grades[-1].hardware
    mine = [grade for grade in grades if grade.hardware_id == hardware.pk]
    return _curve(hardware.name, _versions().filter(run=run), mine)


@dataclass
class LabelledCurve:
    label: str
    run_uuid: str
    curve: LineageCurve


def lineage_overlay(*, runs: list[tuple[str, str]], hardware) -> list[LabelledCurve]:
    """The lineage curves on `hardware` of the given runs ((uuid, label): the problem page's
    top configurations), those graded there; two queries at most."""
    grades = list(_lineage_grades().filter(run__uuid__in=[u for u, _ in runs], hardware=hardware))
    if not grades:
        return []
    by_run: dict[int, list[Evaluation]] = defaultdict(list)
    for grade in grades:
        by_run[grade.run_id].append(grade)
    versions: dict[int, list[LineageVersion]] = defaultdict(list)
    for version in _versions().filter(run_id__in=list(by_run)):
        versions[version.run_id].append(version)
    uuids = {str(grade.run.uuid): grade.run_id for grade in grades}
    return [
        LabelledCurve(label, uuid, _curve(hardware.name, versions[run_id], by_run[run_id]))
        for uuid, label in runs
        if (run_id := uuids.get(uuid)) is not None
    ]


def _lineage_grades():
    return (
        Evaluation.objects.filter(trigger=Evaluation.Trigger.LINEAGE)
        .select_related("hardware", "run")
        .only(
            "solution_id",
            "status",
            "verdict",
            "score",
            "hardware__name",
            "created_at",
            "run_id",
            "run__uuid",
        )
        .order_by("created_at", "pk")
    )


def _versions():
    fields = ("index", "turn", "output_tokens", "wall_s", "how", "solution_id", "run_id")
    return LineageVersion.objects.order_by("run_id", "index").only(*fields)


def _curve(hardware: str, versions, grades: list[Evaluation]) -> LineageCurve:
    versions = list(versions)
    done = {g.solution_id: g for g in grades if g.status == Evaluation.Status.DONE}  # latest wins
    pending = {g.solution_id for g in grades if g.status in PENDING} - set(done)
    points, best = [], None
    for version in versions:
        if grade := done.get(version.solution_id):
            if grade.verdict == Evaluation.Verdict.OK and grade.score is not None:
                best = grade.score if best is None else max(best, grade.score)
            points.append(_curve_point(version, grade, best))
    waiting = sum(version.solution_id in pending for version in versions)
    return LineageCurve(hardware, points, versions=len(versions), waiting=waiting)


PENDING = (Evaluation.Status.QUEUED, Evaluation.Status.RUNNING)


def _curve_point(version: LineageVersion, grade: Evaluation, best: float | None) -> CurvePoint:
    return CurvePoint(
        index=version.index,
        turn=version.turn,
        output_tokens=version.output_tokens,
        wall_s=version.wall_s,
        how=version.how,
        verdict=grade.verdict,
        score=grade.score,
        best=best,
    )
