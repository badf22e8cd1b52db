"""CSV and JSON forms of the board, the matrix and a problem's ranked runs.

The JSON forms are the ``*Export`` dataclasses below (the API documents its schema from them);
the CSV forms are one flat row per board row, per matrix cell, per run. No shape parameters
appear in any of them, so nothing held out can leak through an export.
"""

import csv
import io
from dataclasses import asdict, dataclass, fields
from datetime import date, datetime

from submissions.boards.board import Board, BoardFilters
from submissions.boards.matrix import Cell, Matrix, MatrixRow
from submissions.boards.problems import ProblemPage, RankedRun
from submissions.boards.snapshot import BoardRow, ProblemRef
from submissions.models import HardwareTarget


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
class ProblemRunsExport:
    hardware: HardwareRef
    problem: ProblemRef
    runs: list[RankedRun]


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


def problem_runs_export(page: ProblemPage) -> ProblemRunsExport:
    problem = page.problem
    return ProblemRunsExport(
        hardware=_hardware(page.hardware),
        problem=ProblemRef(slug=problem.slug, title=problem.title, category=problem.category),
        runs=page.runs,
    )


def as_json(export) -> dict:
    """Plain data for a JSON encoder; dates and times as ISO 8601 text."""
    return _plain(asdict(export))


def _plain(value):
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value.isoformat() if isinstance(value, date | datetime) else value


def board_csv(board: Board) -> str:
    return _csv([field.name for field in fields(BoardRow)], map(_values, board.rows))


MATRIX_CONFIG_COLUMNS = tuple(field.name for field in fields(MatrixRow) if field.name != "cells")
MATRIX_COLUMNS = (
    *(name if name != "score" else "config_score" for name in MATRIX_CONFIG_COLUMNS),
    "problem",
    *(field.name for field in fields(Cell)),
)


def matrix_csv(matrix: Matrix) -> str:
    """One line per cell: the configuration, the problem, the cell."""
    lines = (
        [*(getattr(row, name) for name in MATRIX_CONFIG_COLUMNS), problem.slug, *_values(cell)]
        for row in matrix.rows
        for problem, cell in zip(matrix.problems, row.cells, strict=True)
    )
    return _csv(MATRIX_COLUMNS, lines)


def problem_runs_csv(page: ProblemPage) -> str:
    return _csv([field.name for field in fields(RankedRun)], map(_values, page.runs))


def _values(item) -> list:
    return [getattr(item, field.name) for field in fields(item)]


def _csv(header, lines) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows([_cell_text(value) for value in line] for line in lines)
    return out.getvalue()


def _cell_text(value):
    if value is None:
        return ""
    return value.isoformat() if isinstance(value, date | datetime) else value
