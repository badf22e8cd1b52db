"""A run keeps every evaluation; its headline is the latest completed one on its own hardware."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from submissions import selectors
from submissions.models import Evaluation
from tests.factories import make_evaluation, make_hardware, make_result, make_run

pytestmark = pytest.mark.django_db


def timed_result(median_us: float) -> dict:
    result = make_result()
    for shape in result["shapes"]:
        shape["median_us"] = median_us
    return result


def evaluate(run, *, median_us: float, minutes_ago: int = 0, **fields) -> Evaluation:
    finished = timezone.now() - timedelta(minutes=minutes_ago)
    return make_evaluation(run, result=timed_result(median_us), finished_at=finished, **fields)


def test_the_headline_is_the_latest_completed_evaluation_on_the_runs_hardware():
    run = make_run()
    older = evaluate(run, median_us=10.0, minutes_ago=30)
    newer = evaluate(run, median_us=11.0, minutes_ago=10)
    evaluate(run, median_us=5.0, hardware=make_hardware("h200"))
    make_evaluation(run, status=Evaluation.Status.QUEUED, finished_at=None, result={})
    run = selectors.run_detail_queryset().get(pk=run.pk)
    assert selectors.latest_evaluation(run) == newer
    assert older in run.evaluations.all()


def test_a_run_with_only_unfinished_evaluations_has_no_headline():
    run = make_run()
    make_evaluation(run, status=Evaluation.Status.RUNNING, finished_at=None, result={})
    run = selectors.run_detail_queryset().get(pk=run.pk)
    assert selectors.latest_evaluation(run) is None


def test_timing_spread_summarizes_repeated_evaluations_per_shape():
    run = make_run()
    for minutes, median in ((3, 100.0), (2, 102.0), (1, 98.0)):
        evaluate(run, median_us=median, minutes_ago=minutes)
    make_evaluation(run, status=Evaluation.Status.ERROR, verdict="infra_error", result={})
    spread = selectors.timing_spread(selectors.run_detail_queryset().get(pk=run.pk))
    assert [row.label for row in spread] == ["visible 1", "held-out case 1"]
    visible = spread[0]
    assert (visible.n, visible.median_us, visible.min_us, visible.max_us) == (3, 100.0, 98.0, 102.0)
    assert visible.cv_pct == pytest.approx(2.0)


def test_a_single_evaluation_has_no_spread():
    run = make_run()
    evaluate(run, median_us=100.0)
    assert selectors.timing_spread(selectors.run_detail_queryset().get(pk=run.pk)) == []


def test_the_api_and_run_page_show_history_and_spread(client, django_assert_max_num_queries):
    run = make_run(published=True)
    for minutes, median in ((2, 100.0), (1, 104.0)):
        evaluate(run, median_us=median, minutes_ago=minutes)
    body = APIClient().get(f"/api/v1/runs/{run.uuid}/").json()
    assert len(body["evaluations"]) == 2
    assert body["timing_spread"][0] | {"cv_pct": None} == {
        "hardware": run.hardware.name,
        "label": "visible 1",
        "n": 2,
        "median_us": 102.0,
        "min_us": 100.0,
        "max_us": 104.0,
        "cv_pct": None,
    }
    with django_assert_max_num_queries(7):  # the lineage gradings among them
        page = client.get(run.get_absolute_url()).content.decode()
    assert "Timing across evaluations" in page and "held-out case 1" in page
    assert "4099117" not in page


def test_a_grader_failure_heads_the_run_only_until_a_grade_completes():
    run = make_run()
    failed = make_evaluation(run, status=Evaluation.Status.ERROR, verdict="infra_error", result={})
    assert selectors.latest_evaluation(selectors.run_detail_queryset().get(pk=run.pk)) == failed
    graded = evaluate(run, median_us=10.0, minutes_ago=5)
    make_evaluation(run, status=Evaluation.Status.ERROR, verdict="infra_error", result={})
    assert selectors.latest_evaluation(selectors.run_detail_queryset().get(pk=run.pk)) == graded
