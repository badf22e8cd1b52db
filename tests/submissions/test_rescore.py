"""A run's aggregates (score, held-out score, speedups) are written once, in the engine's
contract (runners.contract.run_aggregates): the engine grades by it, the platform stores its
figures with the grade, and ``manage.py rescore`` recomputes stored grades by it after a change
of the rule, without a GPU."""

import io

import pytest
from django.core.management import CommandError, call_command

from runners.evaluate import evaluate
from runners.sandbox import Limits
from submissions.models import Evaluation
from submissions.services import evaluations
from submissions.services.registry import ensure_cpu_target
from tests.factories import make_problem, make_run
from tests.runners.engine_support import FAST_LIMITS, RUNTIME, TINY, run_bounded

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def engine_result():
    """A real grade of the tiny problem by the engine, on the CPU."""
    limits = Limits(**FAST_LIMITS)
    result = run_bounded(evaluate, TINY, RUNTIME / "honest.py", device="cpu", limits=limits)
    assert result.verdict == "ok" and result.score > 0, result.reason
    return result


def graded(result) -> Evaluation:
    """`result` stored as a worker stores it."""
    cpu = ensure_cpu_target()
    run = make_run(problem=make_problem("tiny_tanh"), hardware=cpu)
    evaluation = Evaluation.objects.create(run=run, hardware=cpu)
    claim = evaluations.claim(evaluation_id=evaluation.pk, worker="cpu@test")
    assert evaluations.record_result(claim, result)
    evaluation.refresh_from_db()
    return evaluation


def test_the_platform_recomputes_what_the_engine_graded(engine_result):
    evaluation = graded(engine_result)

    assert evaluation.score == pytest.approx(engine_result.score)
    assert evaluations.rescore(evaluations=Evaluation.objects.all()) == 0
    evaluation.refresh_from_db()
    assert evaluation.score == pytest.approx(engine_result.score)
    assert evaluation.hidden_score == engine_result.hidden_score


def test_after_a_change_of_the_rule_rescore_rewrites_the_stored_figures(engine_result, monkeypatch):
    evaluation = graded(engine_result)
    rule = evaluations.run_aggregates

    def halved(shapes, **how):
        figures = rule(shapes, **how)
        return figures.__class__(figures.score / 2, None, None, None)

    monkeypatch.setattr(evaluations, "run_aggregates", halved)
    out = io.StringIO()
    call_command("rescore", "--hardware", "cpu", stdout=out)

    assert out.getvalue().strip() == "1 of 1 graded evaluation(s) changed"
    evaluation.refresh_from_db()
    assert evaluation.score == pytest.approx(engine_result.score / 2)
    assert evaluations.rescore(evaluations=Evaluation.objects.all()) == 0  # nothing left to do


def test_a_grade_without_shape_rows_keeps_its_figures():
    run = make_run()
    Evaluation.objects.create(
        run=run, hardware=run.hardware, status=Evaluation.Status.DONE, verdict="ok", score=0.3
    )

    assert evaluations.rescore(evaluations=Evaluation.objects.all()) == 0
    assert Evaluation.objects.get().score == 0.3


def test_a_slug_that_names_nothing_is_refused():
    with pytest.raises(CommandError, match="no hardware target nope"):
        call_command("rescore", "--hardware", "nope")
    with pytest.raises(CommandError, match="no problem typo"):
        call_command("rescore", "--problem", "typo")
