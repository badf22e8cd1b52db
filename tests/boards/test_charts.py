import pytest

from submissions.boards.board import BoardFilters
from submissions.boards.charts import chart_data
from submissions.boards.snapshot import refresh_board
from tests.boards.factories import make_graded_run
from tests.factories import make_hardware, make_harness, make_language_model, make_problem

pytestmark = pytest.mark.django_db
NO_FILTERS = BoardFilters()


@pytest.fixture
def deck():
    return {
        "problem": make_problem("softmax"),
        "model": make_language_model("gpt-5", display_name="GPT-5"),
        "harness": make_harness("codex-cli", name="Codex CLI"),
        "hardware": make_hardware("h100-sxm"),
    }


def graded(deck, **fields):
    return make_graded_run(**deck, **fields)


def charts(deck, filters: BoardFilters = NO_FILTERS):
    refresh_board(hardware_id=deck["hardware"].pk)
    return chart_data(hardware=deck["hardware"], filters=filters)


def test_each_run_is_a_point_with_its_score_cost_and_output_tokens(deck):
    run = graded(deck, score=0.7, cost_usd=1.25, output_tokens=40_000, input_tokens=9)
    failed = graded(deck, verdict="incorrect", cost_usd=0.5)

    points = {point.run_uuid: point for point in charts(deck).points}

    point = points[str(run.uuid)]
    assert (point.score, point.cost_usd, point.output_tokens) == (0.7, 1.25, 40_000)
    assert (point.config_label, point.problem_slug, point.verdict) == (
        "GPT-5 · Codex CLI",
        "softmax",
        "ok",
    )
    assert (points[str(failed.uuid)].score, points[str(failed.uuid)].output_tokens) == (0.0, None)


def test_each_configuration_is_one_point_at_its_runs_mean_cost_and_score(deck):
    graded(deck, score=0.5, cost_usd=1.0, output_tokens=300)
    graded(deck, score=0.3, cost_usd=3.0, output_tokens=100)
    graded(deck, score=0.95)  # no cost, no tokens: on no cost chart

    data = charts(deck)

    (cost,) = data.cost
    assert (cost.config_label, cost.runs) == ("GPT-5 · Codex CLI", 2)
    assert (cost.figure, cost.score) == (pytest.approx(2.0), pytest.approx(0.4))
    assert (data.tokens[0].figure, data.tokens[0].runs) == (pytest.approx(200), 2)
    assert (cost.model_slug, cost.harness_slug) == ("gpt-5", "codex-cli")


def test_the_cost_frontier_keeps_configurations_no_cheaper_one_outscores(deck):
    cheap = make_harness("opencode", name="opencode")
    dear = make_harness("claude-code", name="Claude Code")
    worse = make_harness("gemini-cli", name="Gemini CLI")
    graded(deck | {"harness": cheap}, score=0.5, cost_usd=1.0, output_tokens=300)
    graded(deck | {"harness": worse}, score=0.4, cost_usd=2.0, output_tokens=100)
    graded(deck | {"harness": dear}, score=0.9, cost_usd=3.0, output_tokens=900)

    data = charts(deck)

    assert [p.harness_slug for p in data.cost_frontier] == ["opencode", "claude-code"]
    assert [p.figure for p in data.tokens_frontier] == [100, 300, 900]


def test_problem_scores_group_run_scores_per_configuration_and_problem(deck):
    rmsnorm = make_problem("rmsnorm")
    graded(deck, score=0.2)
    graded(deck, score=0.6)
    graded(deck | {"problem": rmsnorm}, score=0.3)
    graded(deck | {"harness": make_harness("opencode", name="opencode")}, score=0.1)

    scores = charts(deck).problem_scores

    summary = [(s.config_label, s.problem_slug, sorted(s.scores), s.mean) for s in scores]
    assert summary == [
        ("GPT-5 · Codex CLI", "rmsnorm", [0.3], pytest.approx(0.3)),
        ("GPT-5 · Codex CLI", "softmax", [0.2, 0.6], pytest.approx(0.4)),
        ("GPT-5 · opencode", "softmax", [0.1], pytest.approx(0.1)),
    ]


def test_the_board_filters_apply_to_the_charts(deck):
    graded(deck)
    kept = graded(deck | {"harness": make_harness("opencode", name="opencode")})

    data = charts(deck, BoardFilters(harness=("opencode",)))

    assert [point.run_uuid for point in data.points] == [str(kept.uuid)]
    assert data.filters == BoardFilters(harness=("opencode",))


@pytest.mark.parametrize("runs", [1, 15])
def test_chart_data_takes_two_queries_whatever_the_number_of_runs(
    deck, runs, django_assert_num_queries
):
    for n in range(runs):
        graded(deck, score=n / runs, cost_usd=n + 1.0, output_tokens=1000 * n)
    refresh_board(hardware_id=deck["hardware"].pk)

    with django_assert_num_queries(2):
        data = chart_data(hardware=deck["hardware"], filters=NO_FILTERS)

    assert len(data.points) == runs


def test_runs_the_grader_failed_on_are_not_plotted(deck):
    shown = graded(deck, score=0.5, cost_usd=1.0)
    graded(deck, verdict="infra_error", cost_usd=0.1)

    data = charts(deck)

    assert [point.run_uuid for point in data.points] == [str(shown.uuid)]
    assert [(point.runs, point.figure) for point in data.cost_frontier] == [(1, 1.0)]
