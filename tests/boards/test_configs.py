import pytest

from submissions.boards.configs import config_results
from submissions.services.registry import ensure_cpu_target
from tests.boards.factories import make_graded_run
from tests.factories import make_hardware, make_harness, make_language_model, make_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def deck():
    return {
        "softmax": make_problem("softmax"),
        "rmsnorm": make_problem("rmsnorm"),
        "gpt": make_language_model("gpt-5", display_name="GPT-5", provider="OpenAI"),
        "claude": make_language_model("claude-opus-4-5", display_name="Claude Opus 4.5"),
        "codex": make_harness("codex-cli", name="Codex CLI"),
        "opencode": make_harness("opencode", name="opencode"),
        "h100": make_hardware("h100-sxm", name="NVIDIA H100 SXM"),
        "cpu": ensure_cpu_target(),  # migration 0002 made it
    }


def graded(deck, *, problem="softmax", model="gpt", harness="codex", hardware="h100", **kw):
    return make_graded_run(
        problem=deck[problem],
        model=deck[model],
        harness=deck[harness],
        hardware=deck[hardware],
        **kw,
    )


def test_a_model_page_lists_each_configuration_of_the_model_only(deck):
    graded(deck, effort="high")
    graded(deck, effort="")
    graded(deck, harness="opencode")
    graded(deck, model="claude")

    results = config_results(model=deck["gpt"])

    assert [result.config_label for result in results] == [
        "GPT-5 · Codex CLI",
        "GPT-5 · Codex CLI · high",
        "GPT-5 · opencode",
    ]
    assert results[1].config_key == "gpt-5/codex-cli/high"
    assert results[0].provider == "OpenAI"


def test_a_harness_page_lists_the_configurations_of_every_model_on_it(deck):
    graded(deck)
    graded(deck, model="claude")
    graded(deck, harness="opencode")

    results = config_results(harness=deck["codex"])

    assert [result.model_slug for result in results] == ["claude-opus-4-5", "gpt-5"]


def test_results_per_hardware_follow_the_board_arithmetic(deck):
    graded(deck, score=0.6)
    graded(deck, score=0.2)
    graded(deck, verdict="incorrect_hidden", score=0.9)

    (result,) = config_results(model=deck["gpt"])
    (h100,) = result.hardware

    assert h100.runs == 3
    # softmax: mean of 0.6, 0.2 and 0 (a failed run); rmsnorm has no run and counts 0
    assert h100.score == pytest.approx((0.8 / 3 + 0) / 2)
    assert (h100.attempted, h100.problem_count) == (1, 2)
    assert h100.pass_visible == pytest.approx(1.0)
    assert h100.pass_hidden == pytest.approx(2 / 3)


def test_the_best_run_of_each_problem_is_named_and_a_missing_one_is_empty(deck):
    graded(deck, score=0.3)
    best = graded(deck, score=0.7)

    (h100,) = config_results(model=deck["gpt"])[0].hardware

    rmsnorm, softmax = h100.best
    assert (rmsnorm.problem_slug, rmsnorm.run_uuid, rmsnorm.score, rmsnorm.runs) == (
        "rmsnorm",
        None,
        None,
        0,
    )
    assert (softmax.run_uuid, softmax.score, softmax.verdict, softmax.runs) == (
        str(best.uuid),
        0.7,
        "ok",
        2,
    )


def test_the_best_run_is_the_earliest_of_equal_scores_and_never_a_failed_one(deck):
    graded(deck, verdict="incorrect", score=0.9)
    earliest = graded(deck, score=0.7)
    graded(deck, score=0.7)

    (h100,) = config_results(model=deck["gpt"])[0].hardware

    softmax = h100.best[1]
    assert (softmax.run_uuid, softmax.score, softmax.runs) == (str(earliest.uuid), 0.7, 3)


def test_ranked_hardware_comes_before_unranked_and_unpublished_runs_do_not_count(deck):
    graded(deck, hardware="cpu", score=None)
    graded(deck)
    graded(deck, published=False)

    (result,) = config_results(model=deck["gpt"])

    assert [(h.hardware_slug, h.is_ranked, h.runs) for h in result.hardware] == [
        ("h100-sxm", True, 1),
        ("cpu", False, 1),
    ]
    assert result.runs == 2


def test_runs_on_a_retired_problem_do_not_count(deck):
    retired = make_problem("old_gemm", is_active=False)
    graded(deck)
    make_graded_run(
        problem=retired, model=deck["gpt"], harness=deck["codex"], hardware=deck["h100"]
    )

    (h100,) = config_results(model=deck["gpt"])[0].hardware

    assert h100.runs == 1
    assert [best.problem_slug for best in h100.best] == ["rmsnorm", "softmax"]


@pytest.mark.parametrize("runs", [1, 10])
def test_config_results_take_three_queries_whatever_the_number_of_runs(
    deck, runs, django_assert_num_queries
):
    for n in range(runs):
        graded(deck, problem=("softmax", "rmsnorm")[n % 2], effort=str(n % 3))
        graded(deck, harness="opencode", hardware=("h100", "cpu")[n % 2])

    with django_assert_num_queries(3):
        results = config_results(model=deck["gpt"])

    assert sum(result.runs for result in results) == 2 * runs


def test_a_run_the_grader_failed_on_scores_for_no_one(deck):
    graded(deck, score=0.6)
    graded(deck, verdict="infra_error")

    (h100,) = config_results(model=deck["gpt"])[0].hardware

    assert (h100.runs, h100.score, h100.pass_visible) == (1, pytest.approx(0.3), 1.0)
