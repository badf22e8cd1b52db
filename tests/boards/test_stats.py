"""The board arithmetic on small hand-made data (no database)."""

import math

import numpy as np
import pytest

from submissions.boards import stats

NAN = math.nan


def runs(**columns) -> stats.RunArrays:
    """A configuration's runs; every column defaults to what a correct, untimed run has."""
    count = len(columns["problem"])
    defaults = {
        "ok": [True] * count,
        "correct_visible": columns.get("ok", [True] * count),
        "correct_hidden": columns.get("ok", [True] * count),
        "speedup_eager": [NAN] * count,
        "speedup_compile": [NAN] * count,
        "tokens": [NAN] * count,
        "cost_usd": [NAN] * count,
        "wall_time_s": [NAN] * count,
    }
    merged = defaults | columns
    return stats.RunArrays(
        problem=np.array(merged.pop("problem"), dtype=np.int64),
        **{name: np.array(values, dtype=_dtype(name)) for name, values in merged.items()},
    )


def _dtype(name: str):
    return bool if name in ("ok", "correct_visible", "correct_hidden") else float


def test_score_is_the_mean_over_active_problems_of_the_mean_run_score_per_problem():
    problems, scores = np.array([0, 0, 1]), np.array([0.6, 0.4, 0.3])

    score = stats.config_score(problems=problems, scores=scores, problem_count=3)

    assert score == pytest.approx((0.5 + 0.3 + 0.0) / 3)


def test_a_missing_problem_counts_zero_and_coverage_counts_attempted_problems():
    summary = stats.summarize(runs=runs(problem=[0, 1], score=[0.8, 0.4]), problem_count=4, seed=1)

    assert summary.score == pytest.approx(0.3)
    assert (summary.attempted, summary.problem_count, summary.runs) == (2, 4, 2)


def test_a_configuration_whose_runs_all_failed_scores_zero_with_nothing_timed():
    failed = runs(
        problem=[0, 1, 1],
        score=[0.0, 0.0, 0.0],
        ok=[False, False, False],
        speedup_eager=[3.0, NAN, 2.0],
    )

    summary = stats.summarize(runs=failed, problem_count=2, seed=1)

    assert (summary.score, summary.ci_low, summary.ci_high) == (0.0, 0.0, 0.0)
    assert (summary.pass_visible, summary.pass_hidden, summary.gap) == (0.0, 0.0, 0.0)
    assert summary.speedup_eager is None
    assert summary.fast_1 == 0.0


def test_a_single_run_has_a_zero_width_interval_at_its_score():
    summary = stats.summarize(runs=runs(problem=[0], score=[0.9]), problem_count=3, seed=1)

    assert summary.score == pytest.approx(0.3)
    assert summary.ci_low == pytest.approx(0.3)
    assert summary.ci_high == pytest.approx(0.3)


def test_the_interval_resamples_runs_within_each_problem():
    # One problem, runs 0 and 1: resampled means are 0, 0.5 or 1 (1/4, 1/2, 1/4), so the
    # 2.5th percentile is 0 and the 97.5th is 1.
    low, high = stats.bootstrap_interval(
        problems=np.array([0, 0]), scores=np.array([0.0, 1.0]), problem_count=1, seed=7
    )

    assert (low, high) == (0.0, 1.0)


def test_the_interval_narrows_with_more_runs_and_holds_the_score():
    def interval(repeats: int) -> tuple[float, float]:
        scores = np.tile([0.2, 0.8], repeats)
        problems = np.zeros(scores.size, dtype=np.int64)
        return stats.bootstrap_interval(problems=problems, scores=scores, problem_count=1, seed=3)

    few, many = interval(2), interval(50)

    assert many[1] - many[0] < few[1] - few[0]
    assert many[0] < 0.5 < many[1]


def test_a_problem_with_runs_that_never_vary_adds_no_width():
    problems = np.array([0, 0, 0, 1, 1])
    scores = np.array([0.5, 0.5, 0.5, 0.0, 1.0])

    low, high = stats.bootstrap_interval(problems=problems, scores=scores, problem_count=2, seed=5)

    # Problem 0 always contributes 0.25; problem 1 contributes 0, 0.25 or 0.5.
    assert (low, high) == pytest.approx((0.25, 0.75))


def test_the_interval_is_the_same_on_every_call():
    problems, scores = np.array([0, 0, 1, 1, 1]), np.array([0.1, 0.7, 0.3, 0.9, 0.4])
    seed = stats.config_seed("gpt-5/codex/high")

    first = stats.bootstrap_interval(problems=problems, scores=scores, problem_count=3, seed=seed)
    again = stats.bootstrap_interval(problems=problems, scores=scores, problem_count=3, seed=seed)

    assert first == again


def test_rows_whose_intervals_overlap_share_a_rank():
    ranks = stats.tie_ranks(
        lows=[0.6, 0.5, 0.1, 0.25], highs=[0.8, 0.7, 0.3, 0.55], scores=[0.7, 0.6, 0.2, 0.4]
    )

    # The first two overlap; the last is only below the first; the third is below all three.
    assert ranks == [1, 1, 3, 2]


def test_a_better_score_never_ranks_below_a_worse_one():
    # A narrow interval (0.50-0.55) lies below a third row's (0.60-0.70); a wide one (0.1-0.9)
    # with a lower score overlaps everything: the better score must not rank below it.
    ranks = stats.tie_ranks(
        lows=[0.50, 0.1, 0.60], highs=[0.55, 0.9, 0.70], scores=[0.52, 0.50, 0.65]
    )

    assert ranks == [1, 1, 1]
    assert stats.tie_ranks(lows=[0.5, 0.1], highs=[0.5, 0.2], scores=[0.5, 0.15]) == [1, 2]


def test_pass_rates_and_the_generalization_gap():
    summary = stats.summarize(
        runs=runs(
            problem=[0, 0, 1, 1],
            score=[0.5, 0.0, 0.0, 0.0],
            ok=[True, False, False, False],
            correct_visible=[True, True, True, False],
            correct_hidden=[True, False, False, False],
        ),
        problem_count=2,
        seed=1,
    )

    assert (summary.pass_visible, summary.pass_hidden) == (0.75, 0.25)
    assert summary.gap == 0.5


def test_speedups_are_geometric_means_over_correct_runs_only():
    summary = stats.summarize(
        runs=runs(
            problem=[0, 1, 1],
            score=[0.5, 0.4, 0.0],
            ok=[True, True, False],
            speedup_eager=[2.0, 8.0, 100.0],
            speedup_compile=[0.5, NAN, 100.0],
        ),
        problem_count=2,
        seed=1,
    )

    assert summary.speedup_eager == pytest.approx(4.0)
    assert summary.speedup_compile == pytest.approx(0.5)


def test_geomean_skips_missing_and_non_positive_figures():
    assert stats.geomean(np.array([2.0, NAN, 0.0, 8.0])) == pytest.approx(4.0)
    assert stats.geomean(np.array([NAN])) is None


def test_fast_p_counts_problems_with_a_correct_run_faster_than_eager_by_p():
    configuration = runs(
        problem=[0, 1, 1, 2],
        score=[0.5, 0.4, 0.0, 0.3],
        ok=[True, True, False, True],
        speedup_eager=[1.5, 0.9, 3.0, NAN],
    )

    assert stats.fast_p(runs=configuration, problem_count=4, threshold=1.0) == 0.25
    assert stats.fast_p(runs=configuration, problem_count=4, threshold=0.5) == 0.5
    assert stats.fast_p(runs=configuration, problem_count=4, threshold=1.5) == 0.0  # not above
    summary = stats.summarize(runs=configuration, problem_count=4, seed=1)
    assert summary.fast_p == (0.5, 0.25, 0.0, 0.0, 0.0, 0.0) and summary.fast_1 == 0.25


def test_medians_of_tokens_cost_and_wall_time_skip_missing_figures():
    summary = stats.summarize(
        runs=runs(
            problem=[0, 0, 0, 0],
            score=[0.1, 0.2, 0.3, 0.4],
            tokens=[100, NAN, 300, 200],
            cost_usd=[NAN, NAN, NAN, NAN],
            wall_time_s=[10.0, 30.0, 20.0, 40.0],
        ),
        problem_count=1,
        seed=1,
    )

    assert summary.median_tokens == 200
    assert summary.median_cost_usd is None
    assert summary.median_wall_s == 25.0


def test_the_pareto_frontier_keeps_points_nothing_beats_on_cost_and_score():
    points = {
        "a": (1.0, 0.5),
        "b": (2.0, 0.4),  # costs more than a and scores less
        "c": (3.0, 0.9),
        "d": (None, 1.0),  # no cost: left out
        "e": (1.0, 0.3),  # same cost as a, lower score
        "f": (0.5, 0.1),
        "g": (3.0, 0.9),  # equal to c: the first one stands
    }

    frontier = stats.pareto_frontier(points=list(points), key=points.get)

    assert frontier == ["f", "a", "c"]


def test_equal_run_scores_share_a_competition_rank():
    assert stats.competition_ranks(scores=[0.9, 0.5, 0.5, 0.1]) == [1, 2, 2, 4]
    assert stats.competition_ranks(scores=[]) == []
