"""The board: filters in the URL, filtered recomputation, ties, sorting, query counts."""

from dataclasses import replace
from datetime import date, timedelta

import pytest
from django.http import QueryDict
from django.utils import timezone

from submissions.boards import snapshot
from submissions.boards.board import (
    SORT_KEYS,
    BoardFilters,
    board,
    ranked_hardware,
    sort_from_query,
)

pytestmark = pytest.mark.django_db


def keys(result) -> list[str]:
    return [row.config_key for row in result.rows]


def test_filters_read_repeated_keys_and_dates_from_the_query():
    query = QueryDict("harness=b&harness=a&harness=&model=gpt-5&since=2026-01-02&until=soon")

    filters = BoardFilters.from_query(query)

    assert filters == BoardFilters(harness=("a", "b"), model=("gpt-5",), since=date(2026, 1, 2))
    assert filters.to_query() == "harness=a&harness=b&model=gpt-5&since=2026-01-02"
    assert BoardFilters.from_query(QueryDict(filters.to_query())) == filters


def test_a_malformed_date_is_an_error_when_strict():
    with pytest.raises(ValueError, match="'soon' is not a date"):
        BoardFilters.from_query(QueryDict("until=soon"), strict=True)


def test_no_filter_is_empty():
    assert BoardFilters.from_query(QueryDict("")).is_empty
    assert not BoardFilters(provider=("OpenAI",)).is_empty


def test_sort_and_order_come_from_the_query():
    assert sort_from_query(QueryDict("sort=score&dir=asc")) == ("score", False)
    assert sort_from_query(QueryDict("")) == ("rank", None)


def test_ranked_hardware_lists_ranked_targets_only(arena):
    assert ranked_hardware() == [arena.h100]


def test_the_unfiltered_board_is_the_stored_rows(arena, grade):
    grade(score=0.6)
    grade(model="claude", score=0.2)
    stored = snapshot.refresh_board(hardware_id=arena.h100.pk)

    result = board(hardware=arena.h100)

    assert [row.config_key for row in result.rows] == [
        row["config_key"] for row in stored.data["rows"]
    ]
    assert result.computed_at == stored.computed_at
    assert [problem.slug for problem in result.problems] == ["gemm", "softmax"]


def test_overlapping_intervals_share_a_rank(arena, grade):
    for score in (0.2, 0.8):
        grade(score=score)
        grade(model="claude", score=score + 0.1)
    grade(harness="claude_code", score=0.05)
    grade(harness="claude_code", score=0.05)

    result = board(hardware=arena.h100)

    ranks = {row.config_key: row.rank for row in result.rows}
    assert ranks == {
        "claude-opus-4-5/codex-cli/": 1,
        "gpt-5/codex-cli/": 1,
        "gpt-5/claude-code/": 3,
    }


def test_a_harness_filter_keeps_each_remaining_row_as_it_was_but_its_rank(arena, grade):
    grade(score=0.2)
    grade(score=0.7)
    grade(harness="claude_code", score=0.9)

    everything = {row.config_key: row for row in board(hardware=arena.h100).rows}
    filtered = board(hardware=arena.h100, filters=BoardFilters(harness=("codex-cli",)))

    assert keys(filtered) == ["gpt-5/codex-cli/"]
    assert everything["gpt-5/codex-cli/"].rank == 2
    assert filtered.rows[0] == replace(everything["gpt-5/codex-cli/"], rank=1)


def test_model_and_provider_filters(arena, grade):
    grade(score=0.2)
    grade(model="claude", score=0.7)

    by_model = board(hardware=arena.h100, filters=BoardFilters(model=("claude-opus-4-5",)))
    by_provider = board(hardware=arena.h100, filters=BoardFilters(provider=("OpenAI",)))

    assert keys(by_model) == ["claude-opus-4-5/codex-cli/"]
    assert keys(by_provider) == ["gpt-5/codex-cli/"]


def test_a_category_filter_scores_over_that_category_only(arena, grade):
    grade(score=0.6)
    grade(problem="gemm", score=0.2)

    result = board(hardware=arena.h100, filters=BoardFilters(category=("cuda-to-cuda",)))

    assert [problem.slug for problem in result.problems] == ["gemm"]
    (row,) = result.rows
    assert (row.score, row.problem_count, row.attempted, row.runs) == (
        pytest.approx(0.2),
        1,
        1,
        1,
    )


def test_dates_bound_the_runs_inclusively(arena, grade):
    today = timezone.localdate()
    grade(score=0.2, created=timezone.now() - timedelta(days=10))
    grade(score=0.4, created=timezone.now() - timedelta(days=5))
    grade(score=0.8)

    result = board(
        hardware=arena.h100,
        filters=BoardFilters(since=today - timedelta(days=5), until=today - timedelta(days=5)),
    )

    (row,) = result.rows
    assert (row.runs, row.score) == (1, pytest.approx(0.4 / 2))


def test_a_filter_that_leaves_nothing_gives_an_empty_board(arena, grade):
    grade(score=0.5)

    result = board(hardware=arena.h100, filters=BoardFilters(model=("nobody",)))

    assert result.rows == []


def test_rows_sort_by_any_column_with_missing_figures_last(arena, grade):
    grade(score=0.6, cost_usd=3.0)
    grade(model="claude", score=0.4, cost_usd=1.0)
    grade(harness="claude_code", score=0.2)

    cheapest = board(hardware=arena.h100, sort="median_cost_usd")
    dearest = board(hardware=arena.h100, sort="median_cost_usd", descending=True)

    assert not cheapest.descending
    assert keys(cheapest) == [
        "claude-opus-4-5/codex-cli/",
        "gpt-5/codex-cli/",
        "gpt-5/claude-code/",
    ]
    assert keys(dearest)[:2] == ["gpt-5/codex-cli/", "claude-opus-4-5/codex-cli/"]
    assert keys(dearest)[2] == "gpt-5/claude-code/"


def test_sorting_is_stable_on_the_rank_order(arena, grade):
    for model in ("gpt", "claude"):
        grade(model=model, score=0.5)
        grade(model=model, problem="gemm", verdict="incorrect")

    by_rank = keys(board(hardware=arena.h100))
    by_pass_rate = keys(board(hardware=arena.h100, sort="pass_visible"))

    assert by_pass_rate == by_rank


def test_an_unknown_sort_key_sorts_by_rank(arena, grade):
    grade(score=0.5)

    result = board(hardware=arena.h100, sort="__class__")

    assert (result.sort, result.descending) == ("rank", False)
    assert "score" in result.sort_keys and "__class__" not in SORT_KEYS


def test_text_columns_sort_alphabetically_by_default(arena, grade):
    grade(score=0.9)
    grade(model="claude", score=0.1)

    result = board(hardware=arena.h100, sort="model_name")

    assert [row.model_name for row in result.rows] == ["Claude Opus 4.5", "GPT-5"]


@pytest.mark.parametrize(
    "filters", [BoardFilters(), BoardFilters(harness=("codex-cli",), since=date(2020, 1, 1))]
)
def test_a_board_takes_one_query_at_any_data_size(arena, grade, django_assert_num_queries, filters):
    grade(score=0.5)
    snapshot.refresh_board(hardware_id=arena.h100.pk)
    with django_assert_num_queries(1):
        board(hardware=arena.h100, filters=filters, sort="score")
    for n in range(8):
        grade(model=("gpt", "claude")[n % 2], problem=("softmax", "gemm")[n % 3 % 2])
    snapshot.refresh_board(hardware_id=arena.h100.pk)

    with django_assert_num_queries(1):
        result = board(hardware=arena.h100, filters=filters, sort="score")
    assert sum(row.runs for row in result.rows) == 9


def test_a_grader_failure_counts_against_no_configuration(arena, grade):
    grade(score=0.8)
    grade(verdict="infra_error", score=None)
    grade(model="claude", verdict="infra_error", score=None)
    snapshot.refresh_board(hardware_id=arena.h100.pk)
    (row,) = board(hardware=arena.h100, filters=BoardFilters()).rows
    assert (row.model_slug, row.runs) == ("gpt-5", 1)
    assert row.score == pytest.approx(0.8 / 2)  # two active problems
