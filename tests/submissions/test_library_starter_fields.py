"""The engine's library and starter references, held-out case labels and scored flags, and the
kernel-to-kernel starter comparison: stored, cached, shown on the run page and in the run API."""

import pytest
from rest_framework.test import APIClient

from runners.schema import BASELINE_KINDS, QUADRANTS, EvaluationResult, TimingStats
from submissions import boards
from submissions.models import BaselineTiming, Evaluation, Problem, ShapeResult
from submissions.services import engine, evaluations
from tests.factories import make_evaluation, make_problem, make_result, make_run

pytestmark = pytest.mark.django_db
KEY = "v1:batch=8,dim=1024:NVIDIA H100 80GB HBM3:2.11.0:t2"
SECRET = {"batch": 4099117, "dim": 12289333}


def stats(median_us: float) -> dict:
    return TimingStats(median_us, median_us, 0.1, median_us, median_us, median_us, 50).to_dict()


def references() -> dict:
    """The per-shape fields issue 11 and 12 added, as the engine writes them."""
    return {
        "baseline_eager": stats(30.0),
        "baseline_compile": stats(20.0),
        "baseline_library": stats(12.0),
        "baseline_starter": stats(40.0),
        "speedup_eager": 3.0,
        "speedup_compile": 2.0,
        "speedup_library": 1.2,
        "speedup_starter": 4.0,
    }


def kernel_to_kernel_result() -> dict:
    """A triton-to-triton grading: the run passes a held-out case its starter fails."""
    result = make_result(hidden_params=SECRET)
    visible, hidden = result["shapes"]
    visible |= references() | {"baseline_key": KEY, "scored": True}
    hidden |= references() | {"case": "alignment-stress", "scored": False}
    hidden |= {"starter_correct": False}
    result["starter"] = {
        "starter_hidden_correct": False,
        "quadrant": "improvement",
        "conditional_hidden_correct": None,
    }
    return result


def test_the_quadrant_choices_are_the_engines():
    assert tuple(Evaluation.Quadrant.values) == QUADRANTS


def test_every_reference_timing_and_the_starters_correctness_round_trip_through_the_cache():
    result = EvaluationResult.from_dict(
        {"problem": "softmax", "problem_version": "v1", "device": "cuda", "verdict": "ok"}
        | {
            "shapes": [
                kernel_to_kernel_result()["shapes"][0]
                | {"starter_correct": True, "baseline_timed_out": ["compile"]}
            ]
        }
    )
    assert engine.store_baselines(result) == 1

    row = BaselineTiming.objects.get()
    assert (row.library, row.starter, row.starter_correct) == (stats(12.0), stats(40.0), True)
    cached = engine.cached_baselines(problem_version="v1")
    assert cached == {
        KEY: {
            "eager": stats(30.0),
            "compile": stats(20.0),
            "library": stats(12.0),
            "starter": stats(40.0),
            "starter_correct": True,
            "timed_out": ["compile"],
        }
    }
    assert set(cached[KEY]) == {*BASELINE_KINDS, "starter_correct", "timed_out"}


def test_a_problem_without_library_or_starter_caches_nulls_for_them():
    shape = kernel_to_kernel_result()["shapes"][0] | {"baseline_library": None}
    shape |= {"baseline_starter": None, "speedup_library": None, "speedup_starter": None}
    result = EvaluationResult.from_dict(
        {"problem": "softmax", "problem_version": "v1", "device": "cuda", "verdict": "ok"}
        | {"shapes": [shape]}
    )
    engine.store_baselines(result)

    entry = engine.cached_baselines(problem_version="v1")[KEY]
    assert (entry["library"], entry["starter"], entry["starter_correct"]) == (None, None, None)


def test_a_recorded_grading_stores_every_new_shape_field_and_the_starter_comparison():
    run = make_run(published=True)
    evaluation = evaluations.create_evaluation(run=run)
    claim = evaluations.claim(evaluation_id=evaluation.pk, worker="gpu1@test")
    result = EvaluationResult.from_dict(kernel_to_kernel_result())

    assert evaluations.record_result(claim, result)

    evaluation.refresh_from_db()
    assert (evaluation.starter_quadrant, evaluation.starter_hidden_correct) == (
        "improvement",
        False,
    )
    assert evaluation.conditional_hidden_correct is None
    rows = {row.set: row for row in ShapeResult.objects.filter(evaluation=evaluation)}
    visible, hidden = rows["visible"], rows["hidden"]
    assert (visible.case, visible.scored, visible.starter_correct) == ("", True, None)
    assert (hidden.case, hidden.scored, hidden.starter_correct) == (
        "alignment-stress",
        False,
        False,
    )
    assert (hidden.speedup_library, hidden.speedup_starter) == (1.2, 4.0)


def test_a_pytorch_to_kernel_grading_has_no_starter_comparison():
    run = make_run(published=True)
    evaluation = evaluations.create_evaluation(run=run)
    claim = evaluations.claim(evaluation_id=evaluation.pk)
    evaluations.record_result(claim, EvaluationResult.from_dict(make_result()))

    evaluation.refresh_from_db()
    assert evaluation.starter_quadrant == ""
    assert evaluation.starter_hidden_correct is None


@pytest.fixture
def kernel_run():
    run = make_run(published=True)
    make_evaluation(
        run,
        result=kernel_to_kernel_result(),
        starter_quadrant="regression",
        starter_hidden_correct=True,
        conditional_hidden_correct=0.75,
    )
    return run


def test_the_run_page_shows_case_labels_the_not_scored_mark_and_both_speedups(client, kernel_run):
    page = client.get(kernel_run.get_absolute_url()).content.decode()

    assert "alignment-stress" in page
    assert "correctness only" in page
    assert "vs library" in page and "1.20" in page
    assert "vs starter" in page and "4.00" in page
    assert "starter no" in page
    assert "4099117" not in page and "12289333" not in page


def test_the_run_page_shows_the_quadrant_in_words(client, kernel_run):
    page = client.get(kernel_run.get_absolute_url()).content.decode()

    assert "Held-out against the starter" in page
    assert "regression vs starter" in page
    assert "correct where the starter is: 75" in page


def test_a_run_without_library_or_starter_shows_neither_column(client):
    run = make_run(published=True)
    make_evaluation(run)

    page = client.get(run.get_absolute_url()).content.decode()

    assert "vs library" not in page and "vs starter" not in page
    assert "Held-out against the starter" not in page


def test_the_run_api_shows_the_new_shape_fields_and_the_starter_comparison(kernel_run):
    body = APIClient().get(f"/api/v1/runs/{kernel_run.uuid}/").json()

    latest = body["latest_evaluation"]
    assert latest["starter_quadrant"] == "regression"
    assert latest["starter_hidden_correct"] is True
    assert latest["conditional_hidden_correct"] == 0.75
    visible, hidden = latest["shapes"]
    assert (visible["speedup_library"], visible["speedup_starter"]) == (1.2, 4.0)
    assert hidden["params"] is None  # held out: its kind and flags are public, its sizes not
    assert (hidden["case"], hidden["scored"], hidden["starter_correct"]) == (
        "alignment-stress",
        False,
        False,
    )


def test_the_roofline_draws_the_library_and_starter_per_visible_shape():
    problem = make_problem(visible_shapes=[{"batch": 8, "dim": 1024}])
    run = make_run(published=True, problem=problem)
    result = kernel_to_kernel_result()
    result["shapes"][0] |= {"tflops": 6.0, "gbps": 3000.0}
    make_evaluation(run, result=result)

    roof = boards.problem_page(problem=problem, hardware=run.hardware).roofline

    kinds = {point.kind: point for point in roof.points}
    assert {"run", "eager", "compile", "library", "starter"} <= set(kinds)
    assert kinds["library"].tflops == pytest.approx(6.0 / 1.2)
    assert kinds["library"].label.startswith("library · visible 1")
    assert roof.library and roof.starter


def test_the_problem_page_names_the_regime_and_the_library_in_the_roofline(client):
    problem = make_problem(
        regime="roofline",
        category=Problem.Category.TRITON_TO_TRITON,
        visible_shapes=[{"batch": 8, "dim": 1024}],
    )
    run = make_run(published=True, problem=problem)
    result = kernel_to_kernel_result()
    result["shapes"][0] |= {"tflops": 6.0, "gbps": 3000.0}
    make_evaluation(run, result=result)

    page = client.get(f"/problems/{problem.slug}/?hardware={run.hardware.slug}").content.decode()

    assert "compute- or memory-bound by shape" in page
    assert "the library's implementation" in page and "the starter" in page
    assert "library (cuBLAS, SDPA...)" in page
