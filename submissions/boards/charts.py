"""Chart data of one ranked hardware target: each configuration's mean score against its mean
cost and its mean output tokens per run, each with its Pareto frontier over configurations, and
each configuration's run scores per problem.

The runs and the filters are the board's own (the snapshot's records through
``board.filter_records``), so a chart never disagrees with the board beside it.
"""

import math
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime
from statistics import fmean

from submissions.boards import snapshot, stats
from submissions.boards.board import BoardFilters, filter_records
from submissions.boards.configs import ConfigRef
from submissions.boards.snapshot import ProblemRef, Records
from submissions.models import HardwareTarget


@dataclass(frozen=True)
class RunPoint:
    run_uuid: str
    config_key: str
    config_label: str
    problem_slug: str
    verdict: str
    score: float
    cost_usd: float | None
    output_tokens: int | None


@dataclass(frozen=True)
class ConfigPoint(ConfigRef):
    """One configuration on a cost chart, over its runs that report the chart's figure: how
    many, their mean score and their mean figure (dollars or output tokens per run)."""

    runs: int
    score: float
    figure: float


@dataclass(frozen=True)
class ProblemScores:
    """One configuration's run scores on one problem, for a strip or box plot."""

    config_key: str
    config_label: str
    problem_slug: str
    problem_title: str
    scores: list[float]
    mean: float


@dataclass(frozen=True)
class ChartData:
    hardware: HardwareTarget
    filters: BoardFilters
    computed_at: datetime
    problems: list[ProblemRef]
    points: list[RunPoint]
    cost: list[ConfigPoint]  # mean cost per run
    cost_frontier: list[ConfigPoint]  # lowest cost for the score, by cost
    tokens: list[ConfigPoint]  # mean output tokens per run
    tokens_frontier: list[ConfigPoint]  # fewest output tokens for the score, by tokens
    problem_scores: list[ProblemScores]


def chart_data(*, hardware: HardwareTarget, filters: BoardFilters) -> ChartData:
    """Two queries whatever the data size: the snapshot's records, then output tokens."""
    stored, computed_at = snapshot.stored_records(hardware=hardware)
    records = _graded(filter_records(records=stored, filters=filters))
    points = _points(records, tokens=_output_tokens(hardware=hardware))
    cost = _config_points(records, points, figure=lambda p: p.cost_usd)
    tokens = _config_points(records, points, figure=lambda p: p.output_tokens)
    return ChartData(
        hardware=hardware,
        filters=filters,
        computed_at=computed_at,
        problems=records.problems,
        points=points,
        cost=cost,
        cost_frontier=stats.pareto_frontier(points=cost, key=lambda p: (p.figure, p.score)),
        tokens=tokens,
        tokens_frontier=stats.pareto_frontier(points=tokens, key=lambda p: (p.figure, p.score)),
        problem_scores=_problem_scores(records, points),
    )


def _config_points(records: Records, points: list[RunPoint], *, figure) -> list[ConfigPoint]:
    """Per configuration, its runs that report the figure: their mean score and figure."""
    grouped: dict[str, list[RunPoint]] = defaultdict(list)
    for point in points:
        if figure(point):
            grouped[point.config_key].append(point)
    refs = {ref.config_key: ref for ref in records.configs}
    return [
        ConfigPoint(
            **vars(refs[key]),
            runs=len(members),
            score=fmean(p.score for p in members),
            figure=fmean(figure(p) for p in members),
        )
        for key, members in sorted(grouped.items(), key=lambda item: refs[item[0]].config_label)
    ]


def _graded(records: Records) -> Records:
    """Leaves out runs the grader itself failed on: as on the board, they score for no one."""
    return replace(records, runs=records.runs.take(snapshot.counted(records.runs)))


def _output_tokens(*, hardware: HardwareTarget) -> dict[str, int | None]:
    # The records keep input + output tokens only; the chart plots output tokens.
    runs = snapshot.counted_runs(hardware_id=hardware.pk).order_by()
    return {str(uuid): tokens for uuid, tokens in runs.values_list("uuid", "output_tokens")}


def _points(records: Records, *, tokens: dict[str, int | None]) -> list[RunPoint]:
    runs = records.runs
    columns = zip(
        runs.uuid.tolist(),
        runs.config.tolist(),
        runs.problem.tolist(),
        runs.verdict.tolist(),
        runs.score.tolist(),
        runs.cost_usd.tolist(),
        strict=True,
    )
    return [
        _point(records, uuid, config, problem, verdict, score, cost, tokens.get(uuid))
        for uuid, config, problem, verdict, score, cost in columns
    ]


def _point(records, uuid, config, problem, verdict, score, cost, output_tokens) -> RunPoint:
    ref = records.configs[config]
    return RunPoint(
        run_uuid=uuid,
        config_key=ref.config_key,
        config_label=ref.config_label,
        problem_slug=records.problems[problem].slug,
        verdict=verdict,
        score=score,
        cost_usd=None if math.isnan(cost) else cost,
        output_tokens=output_tokens,
    )


def _problem_scores(records: Records, points: list[RunPoint]) -> list[ProblemScores]:
    grouped: dict[tuple[str, str], list[RunPoint]] = defaultdict(list)
    for point in points:
        grouped[point.config_key, point.problem_slug].append(point)
    titles = {problem.slug: problem.title for problem in records.problems}
    order = {problem.slug: n for n, problem in enumerate(records.problems)}
    scores = [_scores(group, titles) for group in grouped.values()]
    return sorted(scores, key=lambda s: (s.config_label, order[s.problem_slug]))


def _scores(group: list[RunPoint], titles: dict[str, str]) -> ProblemScores:
    first = group[0]
    values = [point.score for point in group]
    return ProblemScores(
        config_key=first.config_key,
        config_label=first.config_label,
        problem_slug=first.problem_slug,
        problem_title=titles[first.problem_slug],
        scores=values,
        mean=fmean(values),
    )
