import pytest
from django.utils import timezone

from submissions.boards.problems import problem_page, run_rank
from submissions.models import Evaluation, Run, ShapeResult
from submissions.services.registry import ensure_cpu_target
from tests.boards.factories import make_graded_run
from tests.factories import make_hardware, make_harness, make_language_model, make_problem

pytestmark = pytest.mark.django_db
INCORRECT = Evaluation.Verdict.INCORRECT


@pytest.fixture
def deck():
    return {
        "problem": make_problem("softmax", peak_dtype="fp32", visible_shapes=[{"rows": 8}]),
        "model": make_language_model("gpt-5", display_name="GPT-5"),
        "harness": make_harness("codex-cli", name="Codex CLI"),
        "hardware": make_hardware(
            "h100-sxm", bandwidth_gbps=3350.0, peak_tflops={"fp32": 67.0, "bf16": 989.4}
        ),
    }


def graded(deck, **fields) -> Run:
    return make_graded_run(**deck, **fields)


def add_shape(run: Run, *, index: int = 0, shape_set: str = "visible", **measures) -> None:
    values = {"correct": True, "tflops": 2.0, "gbps": 2500.0} | measures
    ShapeResult.objects.create(
        evaluation_id=run.headline_evaluation_id, set=shape_set, index=index, **values
    )


def test_runs_rank_by_score_and_equal_scores_share_a_rank(deck):
    low = graded(deck, score=0.5)
    best = graded(deck, score=0.8)
    tied = graded(deck, score=0.5)
    failed = graded(deck, verdict=INCORRECT, score=0.9)

    page = problem_page(problem=deck["problem"], hardware=deck["hardware"])

    ranked = [(run.run_uuid, run.rank, run.score) for run in page.runs]
    assert ranked == [
        (str(best.uuid), 1, 0.8),
        (str(low.uuid), 2, 0.5),
        (str(tied.uuid), 2, 0.5),
        (str(failed.uuid), 4, 0.0),
    ]


def test_only_published_graded_runs_on_this_hardware_are_ranked(deck):
    shown = graded(deck)
    graded(deck, published=False)
    graded(deck | {"hardware": make_hardware("h200", name="NVIDIA H200")})
    ungraded = graded(deck)
    Run.objects.filter(pk=ungraded.pk).update(headline_evaluation=None)

    page = problem_page(problem=deck["problem"], hardware=deck["hardware"])

    assert [run.run_uuid for run in page.runs] == [str(shown.uuid)]


def test_run_rank_agrees_with_the_problem_page(deck):
    graded(deck, score=0.9)
    middle = graded(deck, score=0.4)
    graded(deck, score=0.4)
    graded(deck, score=0.1)

    assert run_rank(run=middle) == (2, 4)


def test_run_rank_is_none_for_a_run_that_is_not_ranked(deck):
    unpublished = graded(deck, published=False)
    assert run_rank(run=unpublished) is None


def test_the_score_distribution_bins_every_ranked_run(deck):
    for score in (0.0, 0.04, 0.51, 1.0):
        graded(deck, score=score)

    distribution = problem_page(problem=deck["problem"], hardware=deck["hardware"]).distribution

    counts = {(round(b.low, 2), round(b.high, 2)): b.count for b in distribution.bins if b.count}
    assert counts == {(0.0, 0.05): 2, (0.5, 0.55): 1, (0.95, 1.0): 1}
    assert distribution.median == pytest.approx(0.275)


def test_outcomes_count_visible_and_held_out_correctness_per_configuration(deck):
    graded(deck, verdict="ok")
    graded(deck, verdict="ok")
    graded(deck, verdict=Evaluation.Verdict.INCORRECT_HIDDEN)
    graded(deck, verdict=INCORRECT)
    lucky = graded(deck, verdict=INCORRECT)
    Evaluation.objects.filter(pk=lucky.headline_evaluation_id).update(correct_hidden=True)
    graded(deck | {"harness": make_harness("opencode", name="opencode")}, effort="high")

    outcomes = problem_page(problem=deck["problem"], hardware=deck["hardware"]).outcomes

    codex, opencode = outcomes
    assert (codex.config_key, codex.config_label) == ("gpt-5/codex-cli/", "GPT-5 · Codex CLI")
    assert (codex.runs, codex.both, codex.visible_only, codex.hidden_only, codex.neither) == (
        5,
        2,
        1,
        1,
        1,
    )
    assert (opencode.config_label, opencode.both) == ("GPT-5 · opencode · high", 1)


def test_the_roofline_plots_visible_shapes_at_their_arithmetic_intensity(deck):
    run = graded(deck)
    add_shape(run, index=0, tflops=2.0, gbps=2500.0, speedup_eager=2.0, speedup_compile=1.25)

    roofline = problem_page(problem=deck["problem"], hardware=deck["hardware"]).roofline

    assert (roofline.peak_tflops, roofline.bandwidth_gbps) == (67.0, 3350.0)
    assert roofline.ridge_intensity == pytest.approx(67e12 / 3350e9)
    by_kind = {point.kind: point for point in roofline.points}
    assert by_kind["run"].intensity == pytest.approx(0.8)  # 2e12 FLOP/s over 2.5e12 B/s
    assert (by_kind["run"].tflops, by_kind["run"].run_uuid) == (2.0, str(run.uuid))
    assert by_kind["run"].label == "GPT-5 · Codex CLI · visible 1 (rows=8)"
    assert by_kind["eager"].tflops == pytest.approx(1.0)
    assert by_kind["compile"].tflops == pytest.approx(1.6)
    assert by_kind["eager"].intensity == pytest.approx(0.8)
    assert by_kind["compile"].run_uuid is None


def test_reference_points_are_the_median_over_runs_per_visible_shape(deck):
    for eager in (1.0, 2.0, 4.0):
        add_shape(graded(deck), tflops=4.0, gbps=4000.0, speedup_eager=eager)

    roofline = problem_page(problem=deck["problem"], hardware=deck["hardware"]).roofline

    eager_points = [point for point in roofline.points if point.kind == "eager"]
    assert [(p.intensity, p.tflops) for p in eager_points] == [(1.0, 2.0)]
    assert not [point for point in roofline.points if point.kind == "compile"]


def test_the_roofline_leaves_out_held_out_wrong_untimed_and_rejected_shapes(deck):
    run = graded(deck)
    add_shape(run, shape_set="hidden")
    add_shape(run, index=1, correct=False)
    add_shape(run, index=2, tflops=None, gbps=None)
    rejected = graded(deck, verdict=Evaluation.Verdict.TIMING_REJECTED)
    add_shape(rejected)

    roofline = problem_page(problem=deck["problem"], hardware=deck["hardware"]).roofline

    assert roofline.points == []


def test_the_roofline_has_no_compute_roof_for_a_dtype_without_a_peak(deck):
    problem = make_problem("fp8_gemm", peak_dtype="fp8")
    roofline = problem_page(problem=problem, hardware=deck["hardware"]).roofline
    assert (roofline.peak_tflops, roofline.ridge_intensity) == (None, None)


@pytest.mark.parametrize("runs", [1, 12])
def test_the_problem_page_takes_two_queries_whatever_the_number_of_runs(
    deck, runs, django_assert_num_queries
):
    for n in range(runs):
        run = graded(deck, score=n / runs)
        add_shape(run, speedup_eager=1.5, speedup_compile=0.9)
        add_shape(run, index=1, speedup_eager=1.1)

    with django_assert_num_queries(2):
        page = problem_page(problem=deck["problem"], hardware=deck["hardware"])

    assert len(page.runs) == runs
    assert len(page.roofline.points) == 2 * runs + 3


def test_the_roofline_plots_the_best_runs_only(deck, monkeypatch):
    monkeypatch.setattr("submissions.boards.problems.ROOFLINE_RUNS", 2)
    for score in (0.9, 0.1, 0.5):
        add_shape(graded(deck, score=score), tflops=score, gbps=1.0, speedup_eager=1.0)

    roofline = problem_page(problem=deck["problem"], hardware=deck["hardware"]).roofline

    runs = sorted(point.tflops for point in roofline.points if point.kind == "run")
    assert runs == [0.5, 0.9]
    assert [point.tflops for point in roofline.points if point.kind == "eager"] == [0.7]


@pytest.mark.parametrize("runs", [1, 12])
def test_run_rank_takes_one_query_whatever_the_number_of_runs(
    deck, runs, django_assert_num_queries
):
    ranked = [graded(deck, score=n / runs) for n in range(runs)]

    with django_assert_num_queries(1):
        rank = run_rank(run=ranked[0])

    assert rank == (runs, runs)


def test_ranked_runs_say_which_are_synthetic_demo_data(deck):
    demo = graded(deck, metadata={"demo": "synthetic"})
    real = graded(deck, metadata={"demo": True})  # graded by manage.py demo_runs

    runs = problem_page(problem=deck["problem"], hardware=deck["hardware"]).runs

    flags = {run.run_uuid: run.synthetic for run in runs}
    assert flags == {str(demo.uuid): True, str(real.uuid): False}


def test_a_run_the_grader_failed_on_is_neither_ranked_nor_counted(deck):
    graded(deck, score=0.4)
    infra = graded(deck, verdict=Evaluation.Verdict.INFRA_ERROR)

    page = problem_page(problem=deck["problem"], hardware=deck["hardware"])

    assert [run.score for run in page.runs] == [0.4]
    assert [outcome.runs for outcome in page.outcomes] == [1]
    assert run_rank(run=infra) is None


def test_invalidated_runs_and_untrusted_grades_are_not_ranked(deck):
    graded(deck, score=0.4)
    invalidated = graded(deck, score=0.9)
    Run.objects.filter(pk=invalidated.pk).update(invalidated_at=timezone.now())
    untrusted = graded(deck, score=0.8)
    Evaluation.objects.filter(pk=untrusted.headline_evaluation_id).update(trusted=False)

    page = problem_page(problem=deck["problem"], hardware=deck["hardware"])

    assert [run.score for run in page.runs] == [0.4]
    assert run_rank(run=Run.objects.get(pk=invalidated.pk)) is None
    assert run_rank(run=untrusted) is None


def test_on_the_cpu_the_smoke_shapes_are_plotted_for_the_visible_ones(deck):
    cpu = ensure_cpu_target()
    run = graded(deck | {"hardware": cpu}, score=1e-5)
    add_shape(run, shape_set="smoke", index=1, tflops=1e-6, gbps=2e-6, speedup_eager=0.01)

    roofline = problem_page(problem=deck["problem"], hardware=cpu).roofline

    labels = [(point.kind, point.label) for point in roofline.points]
    assert labels == [("run", "GPT-5 · Codex CLI · smoke 2"), ("eager", "eager · smoke 2")]
    assert roofline.points[1].tflops == pytest.approx(1e-4)
