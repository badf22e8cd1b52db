"""The model x problem matrix of one ranked hardware target, from the snapshot's run records.

A cell holds the best (or the median) run score of a configuration on a problem, drawn as a share
of the best cell in its column, and links to the run behind it: the best run, or the run nearest
the median. When none of its runs is correct it shows a failure chip (``snapshot.FAILURE_KINDS``)
instead; among runs that place alike, a correct one stands, then the one that got furthest.
"""

from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from statistics import median

import numpy as np

from submissions.boards import snapshot, stats
from submissions.boards.board import NO_FILTERS, BoardFilters, filter_records
from submissions.boards.configs import ConfigRef
from submissions.boards.snapshot import ProblemRef, Records
from submissions.models import HardwareTarget

STATS = ("best", "median")
NOT_RUN = "not_run"
# How far a failed run got; an infrastructure failure says nothing about the agent.
PROGRESS = {
    "infra": 0,
    "static": 1,
    "build": 2,
    "crash": 3,
    "timeout": 4,
    "wrong_visible": 5,
    "wrong_hidden": 6,
    "": 7,
}


@dataclass(frozen=True)
class Cell:
    score: float | None  # None when the configuration has no run on the problem
    share: float | None  # of the best score in the column, 0..1
    failure: str | None  # a failure kind or "not_run"; None when a run is correct
    run_uuid: str | None
    runs: int


@dataclass(frozen=True)
class MatrixRow(ConfigRef):
    score: float  # the board's configuration score, which orders the rows
    cells: list[Cell]


@dataclass(frozen=True)
class Matrix:
    hardware: HardwareTarget
    problems: list[ProblemRef]  # the columns
    rows: list[MatrixRow]
    stat: str
    filters: BoardFilters
    computed_at: datetime


def matrix(
    *, hardware: HardwareTarget, stat: str = "best", filters: BoardFilters = NO_FILTERS
) -> Matrix:
    if stat not in STATS:
        raise ValueError(f"stat is one of {', '.join(STATS)}, not {stat!r}")
    records, computed_at = snapshot.stored_records(hardware=hardware)
    records = filter_records(records=records, filters=filters)
    rows = _with_shares(_rows(records=records, stat=stat))
    return Matrix(
        hardware=hardware,
        problems=records.problems,
        rows=rows,
        stat=stat,
        filters=filters,
        computed_at=computed_at,
    )


class _Runs:
    """The columns a cell reads, as lists: one numpy lookup per column, not per cell."""

    def __init__(self, records: Records):
        runs = records.runs
        self.score = runs.score.tolist()
        self.ok = runs.ok.tolist()
        self.failure = runs.failure.tolist()
        self.uuid = runs.uuid.tolist()
        self.groups = defaultdict(list)
        for n, key in enumerate(zip(runs.config.tolist(), runs.problem.tolist(), strict=True)):
            self.groups[key].append(n)

    def place(self, n: int) -> tuple:
        return self.ok[n], PROGRESS[self.failure[n]]


def _rows(*, records: Records, stat: str) -> list[MatrixRow]:
    runs = _Runs(records)
    present = np.unique(records.runs.config).tolist()
    rows = [_row(records=records, runs=runs, config=n, stat=stat) for n in present]
    return sorted(rows, key=lambda row: (-row.score, row.config_key))


def _row(*, records: Records, runs: _Runs, config: int, stat: str) -> MatrixRow:
    mine = (records.runs.config == config) & snapshot.counted(records.runs)  # the board's score
    score = stats.config_score(
        problems=records.runs.problem[mine],
        scores=records.runs.score[mine],
        problem_count=len(records.problems),
    )
    cells = [
        _cell(runs.groups.get((config, problem), []), runs=runs, stat=stat)
        for problem in range(len(records.problems))
    ]
    return MatrixRow(**asdict(records.configs[config]), score=score, cells=cells)


def _cell(members: list[int], *, runs: _Runs, stat: str) -> Cell:
    if not members:
        return Cell(score=None, share=None, failure=NOT_RUN, run_uuid=None, runs=0)
    pick = _best if stat == "best" else _nearest_median
    score, chosen = pick(members, runs=runs)
    correct = any(runs.ok[n] for n in members)
    return Cell(
        score=score,
        share=None,
        failure=None if correct else runs.failure[chosen],
        run_uuid=runs.uuid[chosen],
        runs=len(members),
    )


def _best(members: list[int], *, runs: _Runs) -> tuple[float, int]:
    chosen = max(members, key=lambda n: (runs.score[n], *runs.place(n)))
    return runs.score[chosen], chosen


def _nearest_median(members: list[int], *, runs: _Runs) -> tuple[float, int]:
    middle = median(runs.score[n] for n in members)

    def distance(n: int) -> tuple:
        ok, progress = runs.place(n)
        return abs(runs.score[n] - middle), not ok, -progress

    return middle, min(members, key=distance)


def _with_shares(rows: list[MatrixRow]) -> list[MatrixRow]:
    columns = zip(*(row.cells for row in rows), strict=True)
    best = [max((c.score for c in cells if c.score is not None), default=0.0) for cells in columns]
    return [replace(row, cells=_shares(row.cells, best)) for row in rows]


def _shares(cells: list[Cell], best: list[float]) -> list[Cell]:
    return [
        cell if cell.score is None else replace(cell, share=cell.score / top if top > 0 else 0.0)
        for cell, top in zip(cells, best, strict=True)
    ]
