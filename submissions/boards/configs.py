"""Agent configurations (model + harness + effort) and their results, for the model and harness
pages: per hardware target, runs, score, pass rates and the best run of every active problem."""

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from django.db.models import (
    Avg,
    Case,
    Count,
    Exists,
    F,
    FloatField,
    OuterRef,
    Q,
    Value,
    When,
    Window,
)
from django.db.models.functions import Coalesce, RowNumber

from submissions.models import (
    Evaluation,
    Harness,
    LanguageModel,
    Problem,
    RetiredProblemVersion,
    Run,
)

# The columns a configuration is read from, on any query over runs.
CONFIG_VALUES = (
    "language_model__slug",
    "language_model__display_name",
    "language_model__provider",
    "harness__slug",
    "harness__name",
    "effort",
)
# The headline evaluation's columns that a run's outcome is read from.
OUTCOME_VALUES = (
    "headline_evaluation__verdict",
    "headline_evaluation__score",
    "headline_evaluation__hidden_score",
    "headline_evaluation__correct_visible",
    "headline_evaluation__correct_hidden",
)


def config_key(*, model_slug: str, harness_slug: str, effort: str) -> str:
    return f"{model_slug}/{harness_slug}/{effort}"


def config_fields(row: dict) -> dict:
    """The configuration fields every result dataclass carries, from a row of CONFIG_VALUES."""
    return dict(_config_fields(tuple(row[name] for name in CONFIG_VALUES)))


@lru_cache(maxsize=4096)
def _config_fields(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    # Pages read thousands of runs of a few dozen configurations: each is spelled out once.
    model_slug, model_name, provider, harness_slug, harness_name, effort = values
    key = config_key(model_slug=model_slug, harness_slug=harness_slug, effort=effort)
    fields = {
        "model_slug": model_slug,
        "model_name": model_name,
        "provider": provider,
        "harness_slug": harness_slug,
        "harness_name": harness_name,
        "effort": effort,
        "config_key": key,
        "config_label": " · ".join(filter(None, (model_name, harness_name, effort))),
    }
    return tuple(fields.items())


def run_score(row: dict) -> float:
    """A run's score on boards: its headline score, 0 when null or any gate failed."""
    if row["headline_evaluation__verdict"] != Evaluation.Verdict.OK:
        return 0.0
    return row["headline_evaluation__score"] or 0.0


# The problems a board ranks on: the active deck, less problems scored by speedup (an imported
# KernelBench model, say), whose scores are speedups over eager and cannot be averaged with the
# peak fractions the other problems score. Their runs keep their run and problem pages.
RANKED_PROBLEMS = Q(is_active=True) & ~Q(regime="speedup")
RANKED_RUN_PROBLEMS = Q(problem__is_active=True) & ~Q(problem__regime="speedup")


def counted_runs():
    """Runs that count on boards and result pages: published and not invalidated by staff,
    with a headline evaluation made as the protocol requires (trusted), of a problem version
    staff have not retired."""
    retired = RetiredProblemVersion.objects.filter(
        problem=OuterRef("problem"), version=OuterRef("problem_version")
    )
    return (
        Run.objects.published().filter(headline_evaluation__trusted=True).exclude(Exists(retired))
    )


# A grader failure (infra_error, or no verdict) says nothing about the candidate: as on the
# board, such a run ranks and scores for no one until it is re-graded.
GRADED_VERDICTS = tuple(v for v in Evaluation.Verdict.values if v != Evaluation.Verdict.INFRA_ERROR)


def graded_runs():
    """Counted runs whose headline evaluation grades the candidate: those that rank and score."""
    return counted_runs().filter(headline_evaluation__verdict__in=GRADED_VERDICTS)


@dataclass(frozen=True)
class ConfigRef:
    """An agent configuration: language model, harness and effort. Every row of a board, matrix
    or result list that stands for a configuration extends it."""

    config_key: str
    config_label: str
    model_slug: str
    model_name: str
    provider: str
    harness_slug: str
    harness_name: str
    effort: str


@dataclass(frozen=True)
class ProblemBest:
    problem_slug: str
    problem_title: str
    runs: int
    run_uuid: str | None  # the best-scoring run, None when the problem has no run
    score: float | None
    verdict: str


@dataclass(frozen=True)
class HardwareResult:
    hardware_slug: str
    hardware_name: str
    is_ranked: bool
    runs: int
    score: float  # the board's arithmetic: mean over active problems of the mean run score
    attempted: int
    problem_count: int
    pass_visible: float
    pass_hidden: float
    best: list[ProblemBest]


@dataclass(frozen=True)
class ConfigResult(ConfigRef):
    runs: int
    hardware: list[HardwareResult]


def config_results(
    *, model: LanguageModel | None = None, harness: Harness | None = None
) -> list[ConfigResult]:
    """Every configuration of the model (or harness, or both; or all of them), on every
    hardware it ran on, over the active problems. Three queries whatever the data size: the
    problems, then per configuration, target and problem the database's run totals and best run.
    """
    problems = list(Problem.objects.filter(RANKED_PROBLEMS).values("pk", "slug", "title"))
    runs = _runs(model=model, harness=harness)
    bests = {_cell(row): row for row in _best_runs(runs)}
    grouped: dict[str, dict[int, dict[int, dict]]] = defaultdict(lambda: defaultdict(dict))
    for row in _cell_totals(runs):
        cells = grouped[config_fields(row)["config_key"]][row["hardware_id"]]
        cells[row["problem_id"]] = row | {"best": bests[_cell(row)]}
    results = [_config_result(by_hardware, problems) for by_hardware in grouped.values()]
    return sorted(results, key=lambda result: result.config_label)


# A run's score on boards (see run_score), in SQL.
SCORE = Case(
    When(
        headline_evaluation__verdict=Evaluation.Verdict.OK,
        then=Coalesce("headline_evaluation__score", Value(0.0)),
    ),
    default=Value(0.0),
    output_field=FloatField(),
)
# One configuration on one problem and hardware target.
CELL = (*CONFIG_VALUES, "hardware_id", "problem_id")


def _cell(row: dict) -> tuple:
    return tuple(row[name] for name in CELL)


def _runs(*, model: LanguageModel | None, harness: Harness | None):
    runs = graded_runs().filter(RANKED_RUN_PROBLEMS).order_by()
    if model is not None:
        runs = runs.filter(language_model=model)
    if harness is not None:
        runs = runs.filter(harness=harness)
    return runs


def _cell_totals(runs) -> list[dict]:
    hardware = ("hardware__slug", "hardware__name", "hardware__is_ranked")
    return list(
        runs.values(*CELL, *hardware).annotate(
            runs=Count("pk"),
            mean=Avg(SCORE),
            visible=Count("pk", filter=Q(headline_evaluation__correct_visible=True)),
            hidden=Count("pk", filter=Q(headline_evaluation__correct_hidden=True)),
        )
    )


def _best_runs(runs) -> list[dict]:
    """Each cell's best run; of equal scores the earliest."""
    cell = ("language_model_id", "harness_id", "effort", "hardware_id", "problem_id")
    place = Window(
        RowNumber(),
        partition_by=[F(name) for name in cell],
        order_by=[SCORE.desc(), F("created_at").asc(), F("pk").asc()],
    )
    best = runs.annotate(place=place, score=SCORE).filter(place=1)
    return list(best.values(*CELL, "uuid", "score", "headline_evaluation__verdict"))


def _config_result(by_hardware: dict[int, dict[int, dict]], problems: list[dict]) -> ConfigResult:
    first = next(iter(next(iter(by_hardware.values())).values()))
    per_hardware = [_hardware_result(cells, problems) for cells in by_hardware.values()]
    per_hardware.sort(key=lambda result: (not result.is_ranked, result.hardware_name))
    return ConfigResult(
        **config_fields(first),
        runs=sum(result.runs for result in per_hardware),
        hardware=per_hardware,
    )


def _hardware_result(cells: dict[int, dict], problems: list[dict]) -> HardwareResult:
    first = next(iter(cells.values()))
    runs = sum(cell["runs"] for cell in cells.values())
    return HardwareResult(
        hardware_slug=first["hardware__slug"],
        hardware_name=first["hardware__name"],
        is_ranked=first["hardware__is_ranked"],
        runs=runs,
        # the board's arithmetic: a problem without a run counts 0
        score=sum(cell["mean"] for cell in cells.values()) / len(problems),
        attempted=len(cells),
        problem_count=len(problems),
        pass_visible=sum(cell["visible"] for cell in cells.values()) / runs,
        pass_hidden=sum(cell["hidden"] for cell in cells.values()) / runs,
        best=[_problem_best(problem, cells.get(problem["pk"])) for problem in problems],
    )


def _problem_best(problem: dict, cell: dict | None) -> ProblemBest:
    best = cell["best"] if cell else None
    return ProblemBest(
        problem_slug=problem["slug"],
        problem_title=problem["title"],
        runs=cell["runs"] if cell else 0,
        run_uuid=str(best["uuid"]) if best else None,
        score=best["score"] if best else None,
        verdict=best["headline_evaluation__verdict"] if best else "",
    )
