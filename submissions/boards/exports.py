"""CSV and JSON forms of the board, the matrix and a problem's ranked runs.

The JSON forms are the ``*Export`` dataclasses below (the API documents its schema from them);
the CSV forms are one flat row per board row, per matrix cell, per run. All three read the board
snapshot only, so they agree with each other and with its ``computed_at``. No shape parameters
appear in any of them, so nothing held out can leak through an export.
"""

import csv
import io
from dataclasses import asdict, dataclass, fields, is_dataclass
from datetime import date, datetime

import numpy as np

from submissions.boards import snapshot, stats
from submissions.boards.board import Board, BoardFilters
from submissions.boards.configs import ConfigRef
from submissions.boards.matrix import Cell, Matrix, MatrixRow
from submissions.boards.snapshot import BoardRow, BudgetCount, ProblemRef
from submissions.models import HardwareTarget, Problem


@dataclass(frozen=True)
class HardwareRef:
    slug: str
    name: str


@dataclass(frozen=True)
class BoardExport:
    hardware: HardwareRef
    computed_at: datetime
    filters: BoardFilters
    sort: str
    descending: bool
    problems: list[ProblemRef]
    rows: list[BoardRow]
    # the declared wall budgets of the runs ranked: more than one means the ranking mixes them
    budgets: list[BudgetCount]


@dataclass(frozen=True)
class MatrixExport:
    """Each row's ``cells`` follow ``problems``, one cell per problem."""

    hardware: HardwareRef
    computed_at: datetime
    stat: str
    filters: BoardFilters
    problems: list[ProblemRef]
    rows: list[MatrixRow]


@dataclass(frozen=True)
class ProblemRun(ConfigRef):
    rank: int  # equal scores share a rank
    run_uuid: str
    score: float
    hidden_score: float | None
    verdict: str
    correct_visible: bool
    correct_hidden: bool
    created_at: datetime


@dataclass(frozen=True)
class ProblemRuns:
    hardware: HardwareRef
    problem: ProblemRef
    computed_at: datetime
    runs: list[ProblemRun]  # best score first; the earlier run first among equals


def problem_runs(*, problem: Problem, hardware: HardwareTarget) -> ProblemRuns:
    """The counted runs of one active problem on one ranked target, from the snapshot."""
    records, computed_at = snapshot.stored_records(hardware=hardware)
    slugs = [ref.slug for ref in records.problems]
    column = slugs.index(problem.slug) if problem.slug in slugs else -1
    runs = records.runs.take(np.flatnonzero(records.runs.problem == column))
    runs = runs.take(np.argsort(-runs.score, kind="stable"))
    ranks = stats.competition_ranks(scores=runs.score.tolist())
    configs = [asdict(config) for config in records.configs]
    return ProblemRuns(
        hardware=_hardware(hardware),
        problem=ProblemRef(slug=problem.slug, title=problem.title, category=problem.category),
        computed_at=computed_at,
        runs=[
            _problem_run(configs=configs, runs=runs, n=n, rank=rank) for n, rank in enumerate(ranks)
        ],
    )


def _problem_run(*, configs: list[dict], runs: snapshot.RunTable, n: int, rank: int) -> ProblemRun:
    hidden = float(runs.hidden_score[n])
    return ProblemRun(
        rank=rank,
        run_uuid=str(runs.uuid[n]),
        **configs[runs.config[n]],
        score=float(runs.score[n]),
        hidden_score=None if np.isnan(hidden) else hidden,
        verdict=str(runs.verdict[n]),
        correct_visible=bool(runs.correct_visible[n]),
        correct_hidden=bool(runs.correct_hidden[n]),
        created_at=datetime.fromisoformat(str(runs.created[n])),
    )


def _hardware(target: HardwareTarget) -> HardwareRef:
    return HardwareRef(slug=target.slug, name=target.name)


def board_export(board: Board) -> BoardExport:
    return BoardExport(
        hardware=_hardware(board.hardware),
        computed_at=board.computed_at,
        filters=board.filters,
        sort=board.sort,
        descending=board.descending,
        problems=board.problems,
        rows=board.rows,
        budgets=board.budgets,
    )


def matrix_export(matrix: Matrix) -> MatrixExport:
    return MatrixExport(
        hardware=_hardware(matrix.hardware),
        computed_at=matrix.computed_at,
        stat=matrix.stat,
        filters=matrix.filters,
        problems=matrix.problems,
        rows=matrix.rows,
    )


def as_json(value):
    """Plain data for a JSON encoder, dates and times as ISO 8601 text; unlike ``asdict``
    this copies nothing, which is most of the time of a problem's thousand runs."""
    if isinstance(value, str | int | float | None):
        return value
    if is_dataclass(value):
        return {field.name: as_json(getattr(value, field.name)) for field in fields(value)}
    if isinstance(value, list | tuple):
        return [as_json(item) for item in value]
    return value.isoformat() if isinstance(value, date | datetime) else value


def board_csv(board: Board) -> str:
    columns = _columns(BoardRow)
    return _csv(columns, (_values(row, columns) for row in board.rows))


MATRIX_CONFIG_COLUMNS = tuple(field.name for field in fields(MatrixRow) if field.name != "cells")
MATRIX_COLUMNS = (
    *(name if name != "score" else "config_score" for name in MATRIX_CONFIG_COLUMNS),
    "problem",
    *(field.name for field in fields(Cell)),
)
CELL_COLUMNS = [field.name for field in fields(Cell)]


def matrix_csv(matrix: Matrix) -> str:
    """One line per cell: the configuration, the problem, the cell."""
    lines = (
        [
            *(getattr(row, name) for name in MATRIX_CONFIG_COLUMNS),
            problem.slug,
            *_values(cell, CELL_COLUMNS),
        ]
        for row in matrix.rows
        for problem, cell in zip(matrix.problems, row.cells, strict=True)
    )
    return _csv(MATRIX_COLUMNS, lines)


def problem_runs_csv(result: ProblemRuns) -> str:
    columns = _columns(ProblemRun)
    return _csv(columns, (_values(run, columns) for run in result.runs))


def _columns(row_type) -> list[str]:
    """The row's fields, its rank first (the configuration's fields come first by inheritance)."""
    names = [field.name for field in fields(row_type)]
    return sorted(names, key=lambda name: name != "rank")


def _values(item, columns: list[str]) -> list:
    return [getattr(item, name) for name in columns]


def _csv(header, lines) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows([_cell_text(value) for value in line] for line in lines)
    return out.getvalue()


def _cell_text(value):
    if value is None:
        return ""
    if isinstance(value, list | tuple):  # fast_p: its values at FAST_P_THRESHOLDS, spaced
        return " ".join(str(item) for item in value)
    return value.isoformat() if isinstance(value, date | datetime) else value
