"""Agent configurations (model + harness + effort) and their results, for the model and harness
pages: per hardware target, runs, score, pass rates and the best run of every active problem."""

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from submissions.boards import stats
from submissions.models import Evaluation, Harness, LanguageModel, Problem, Run

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


def counted_runs():
    """Runs that count on boards and result pages: published, with a headline evaluation."""
    return Run.objects.filter(published=True, headline_evaluation__isnull=False)


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
class ConfigResult:
    config_key: str
    config_label: str
    model_slug: str
    model_name: str
    provider: str
    harness_slug: str
    harness_name: str
    effort: str
    runs: int
    hardware: list[HardwareResult]


def config_results(
    *, model: LanguageModel | None = None, harness: Harness | None = None
) -> list[ConfigResult]:
    """Every configuration of the model (or harness, or both), on every hardware it ran on,
    over the active problems; two queries whatever the data size."""
    problems = list(Problem.objects.filter(is_active=True).values("pk", "slug", "title"))
    rows = _result_rows(model=model, harness=harness)
    grouped: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        grouped[config_fields(row)["config_key"]][row["hardware_id"]].append(row)
    results = [_config_result(by_hardware, problems) for by_hardware in grouped.values()]
    return sorted(results, key=lambda result: result.config_label)


def _result_rows(*, model: LanguageModel | None, harness: Harness | None) -> list[dict]:
    runs = counted_runs().filter(problem__is_active=True)
    if model is not None:
        runs = runs.filter(language_model=model)
    if harness is not None:
        runs = runs.filter(harness=harness)
    hardware = ("hardware_id", "hardware__slug", "hardware__name", "hardware__is_ranked")
    return list(
        runs.order_by("created_at", "pk").values(
            "uuid", "problem_id", *hardware, *CONFIG_VALUES, *OUTCOME_VALUES
        )
    )


def _config_result(by_hardware: dict[int, list[dict]], problems: list[dict]) -> ConfigResult:
    first = next(iter(by_hardware.values()))[0]
    per_hardware = [_hardware_result(rows, problems) for rows in by_hardware.values()]
    per_hardware.sort(key=lambda result: (not result.is_ranked, result.hardware_name))
    return ConfigResult(
        **config_fields(first),
        runs=sum(result.runs for result in per_hardware),
        hardware=per_hardware,
    )


def _hardware_result(rows: list[dict], problems: list[dict]) -> HardwareResult:
    by_problem: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        by_problem[row["problem_id"]].append(row)
    return HardwareResult(
        hardware_slug=rows[0]["hardware__slug"],
        hardware_name=rows[0]["hardware__name"],
        is_ranked=rows[0]["hardware__is_ranked"],
        runs=len(rows),
        score=_score(rows, problems),
        attempted=len(by_problem),
        problem_count=len(problems),
        pass_visible=_share(rows, "headline_evaluation__correct_visible"),
        pass_hidden=_share(rows, "headline_evaluation__correct_hidden"),
        best=[_problem_best(problem, by_problem.get(problem["pk"], [])) for problem in problems],
    )


def _score(rows: list[dict], problems: list[dict]) -> float:
    column = {problem["pk"]: n for n, problem in enumerate(problems)}
    return stats.config_score(
        problems=np.array([column[row["problem_id"]] for row in rows], dtype=np.intp),
        scores=np.array([run_score(row) for row in rows], dtype=float),
        problem_count=len(problems),
    )


def _share(rows: list[dict], column: str) -> float:
    return sum(1 for row in rows if row[column]) / len(rows)


def _problem_best(problem: dict, rows: list[dict]) -> ProblemBest:
    # max keeps the first of equal scores: rows come oldest first, so the earliest wins a tie
    best = max(rows, key=run_score, default=None)
    return ProblemBest(
        problem_slug=problem["slug"],
        problem_title=problem["title"],
        runs=len(rows),
        run_uuid=str(best["uuid"]) if best else None,
        score=run_score(best) if best else None,
        verdict=best["headline_evaluation__verdict"] if best else "",
    )
