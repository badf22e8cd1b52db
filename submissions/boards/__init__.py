"""Reads and arithmetic behind the boards (issue 10): every number a board page shows.

Pages and the API import from here. Only ``refresh_board`` writes: when the services call it,
and on the first read of a board whose snapshot is missing or of an older format.
"""

from submissions.boards.board import (
    Board,
    BoardFilters,
    Provenance,
    board,
    budget_choices,
    counted_provenance,
    ranked_hardware,
    ranked_target,
)
from submissions.boards.charts import chart_data
from submissions.boards.configs import config_results
from submissions.boards.matrix import Cell, Matrix, MatrixRow, matrix
from submissions.boards.problems import problem_page, run_rank
from submissions.boards.snapshot import BoardRow, refresh_board, refresh_boards_for_run
from submissions.boards.stats import FAST_P_THRESHOLDS

__all__ = [
    "FAST_P_THRESHOLDS",
    "Board",
    "BoardFilters",
    "BoardRow",
    "Cell",
    "Matrix",
    "MatrixRow",
    "Provenance",
    "board",
    "budget_choices",
    "chart_data",
    "config_results",
    "counted_provenance",
    "matrix",
    "problem_page",
    "ranked_hardware",
    "ranked_target",
    "refresh_board",
    "refresh_boards_for_run",
    "run_rank",
]
