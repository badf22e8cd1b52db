"""The model x problem matrix: cells, shares, failure chips and the runs behind them."""

import pytest

from submissions.boards import snapshot
from submissions.boards.board import BoardFilters
from submissions.boards.matrix import matrix

pytestmark = pytest.mark.django_db


def cells_of(result, config_key: str) -> dict:
    row = next(row for row in result.rows if row.config_key == config_key)
    return {problem.slug: cell for problem, cell in zip(result.problems, row.cells, strict=True)}


GPT = "gpt-5/codex-cli/"
CLAUDE = "claude-opus-4-5/codex-cli/"


def test_a_best_cell_is_the_best_run_drawn_as_a_share_of_its_column(arena, grade):
    grade(score=0.3)
    best = grade(score=0.6)
    grade(model="claude", score=0.8)

    result = matrix(hardware=arena.h100)

    gpt, claude = cells_of(result, GPT)["softmax"], cells_of(result, CLAUDE)["softmax"]
    assert (gpt.score, gpt.run_uuid, gpt.runs) == (0.6, str(best.uuid), 2)
    assert gpt.share == pytest.approx(0.75)
    assert (claude.score, claude.share, claude.failure) == (0.8, 1.0, None)


def test_a_median_cell_links_the_run_nearest_the_median(arena, grade):
    grade(score=0.1)
    middle = grade(score=0.5)
    grade(score=0.6)

    cell = cells_of(matrix(hardware=arena.h100, stat="median"), GPT)["softmax"]

    assert (cell.score, cell.run_uuid, cell.share) == (0.5, str(middle.uuid), 1.0)


def test_a_problem_without_a_run_is_not_run(arena, grade):
    grade(score=0.5)

    cell = cells_of(matrix(hardware=arena.h100), GPT)["gemm"]

    assert (cell.score, cell.share, cell.failure, cell.run_uuid, cell.runs) == (
        None,
        None,
        "not_run",
        None,
        0,
    )


@pytest.mark.parametrize(
    ("verdicts", "failure", "shown"),
    [
        (["syntax_error"], "static", 0),
        (["build_error", "incorrect_hidden", "incorrect"], "wrong_hidden", 1),
        (["infra_error", "timeout"], "timeout", 1),
        (["crashed", "runtime_error"], "crash", 0),
        (["infra_error"], "infra", 0),
    ],
)
def test_a_cell_without_a_correct_run_shows_the_failure_that_got_furthest(
    arena, grade, verdicts, failure, shown
):
    runs = [grade(verdict=verdict) for verdict in verdicts]

    for stat in ("best", "median"):
        cell = cells_of(matrix(hardware=arena.h100, stat=stat), GPT)["softmax"]
        assert (cell.score, cell.failure) == (0.0, failure)
        assert cell.run_uuid == str(runs[shown].uuid)


def test_one_correct_run_clears_the_failure_chip(arena, grade):
    grade(verdict="build_error")
    correct = grade(score=0.0)

    cell = cells_of(matrix(hardware=arena.h100), GPT)["softmax"]

    assert (cell.failure, cell.run_uuid, cell.share) == (None, str(correct.uuid), 0.0)


def test_rows_follow_the_configuration_score(arena, grade):
    grade(score=0.3)
    grade(model="claude", score=0.3)
    grade(model="claude", problem="gemm", score=0.3)

    result = matrix(hardware=arena.h100)

    assert [(row.config_key, row.score) for row in result.rows] == [
        (CLAUDE, pytest.approx(0.3)),
        (GPT, pytest.approx(0.15)),
    ]


def test_filters_narrow_the_rows_and_the_columns(arena, grade):
    grade(score=0.3)
    grade(model="claude", problem="gemm", score=0.3)

    result = matrix(hardware=arena.h100, filters=BoardFilters(category=("cuda-to-cuda",)))

    assert [problem.slug for problem in result.problems] == ["gemm"]
    assert [row.config_key for row in result.rows] == [CLAUDE]


def test_an_unknown_stat_is_refused(arena):
    with pytest.raises(ValueError, match="stat is one of best, median"):
        matrix(hardware=arena.h100, stat="mean")


def test_a_matrix_takes_one_query_at_any_data_size(arena, grade, django_assert_num_queries):
    grade(score=0.5)
    snapshot.refresh_board(hardware_id=arena.h100.pk)
    with django_assert_num_queries(1):
        matrix(hardware=arena.h100)
    for n in range(8):
        grade(model=("gpt", "claude")[n % 2], problem=("softmax", "gemm")[n % 3 % 2])
    snapshot.refresh_board(hardware_id=arena.h100.pk)

    with django_assert_num_queries(1):
        result = matrix(hardware=arena.h100, stat="median")
    assert sum(cell.runs for row in result.rows for cell in row.cells) == 9


def test_a_rows_score_is_the_boards_score_even_beside_a_grader_failure(arena, grade):
    grade(score=0.4)
    grade(verdict="infra_error")  # counts for no one until re-graded; its cell still marks it
    grade(model="claude", score=0.2)

    board = {row.config_key: row.score for row in snapshot.stored_rows(hardware=arena.h100)[0]}
    result = matrix(hardware=arena.h100)

    assert {row.config_key: row.score for row in result.rows} == pytest.approx(board)
    assert board[GPT] == pytest.approx(0.2)  # 0.4 on one of two problems
