"""GET /api/v1/runs/: published runs only, filtered and paginated, in constant queries."""

import pytest
from rest_framework.test import APIClient

from submissions.models import Evaluation
from tests.factories import (
    make_evaluation,
    make_hardware,
    make_language_model,
    make_problem,
    make_result,
    make_run,
)

pytestmark = pytest.mark.django_db
URL = "/api/v1/runs/"


def listing(**query) -> dict:
    response = APIClient().get(URL, query)
    assert response.status_code == 200, response.content
    return response.json()


def test_only_published_runs_are_listed_newest_first():
    older = make_run()
    newer = make_run()
    make_run(published=False)
    body = listing()
    assert body["count"] == 2
    assert [row["id"] for row in body["results"]] == [str(newer.uuid), str(older.uuid)]


def test_each_row_carries_its_headline_and_figures_without_shapes():
    run = make_run(input_tokens=1200, cost_usd=0.5, figure_sources={"cost_usd": "metadata"})
    make_evaluation(run, result=make_result() | {"score": 0.7})
    row = listing()["results"][0]
    assert row["headline"]["verdict"] == "ok"
    assert row["headline"]["score"] == 0.7
    assert (row["input_tokens"], row["cost_usd"]) == (1200, 0.5)
    assert row["figure_sources"] == {"cost_usd": "metadata"}
    assert "4099117" not in str(row) and "shapes" not in row["headline"]


def test_filters_narrow_the_list():
    softmax, other_problem = make_problem("softmax"), make_problem("rmsnorm")
    claude, other_model = make_language_model("claude-opus-4-5"), make_language_model("gpt-5")
    ok = make_run(problem=softmax, language_model=claude)
    make_evaluation(ok)
    failed = make_run(problem=other_problem, language_model=other_model)
    make_evaluation(failed, result=make_result(verdict="incorrect"), verdict="incorrect")
    make_run(problem=softmax, language_model=claude, hardware=make_hardware("h200"))
    assert [r["id"] for r in listing(problem="rmsnorm")["results"]] == [str(failed.uuid)]
    assert [r["id"] for r in listing(model="gpt-5")["results"]] == [str(failed.uuid)]
    assert [r["id"] for r in listing(verdict="ok")["results"]] == [str(ok.uuid)]
    assert listing(hardware="h200")["count"] == 1


def test_a_bad_filter_value_is_refused_with_its_name():
    response = APIClient().get(URL, {"verdict": "brilliant"})
    assert response.status_code == 400
    assert "verdict" in response.json()


def test_pages_hold_page_size_runs():
    for _ in range(3):
        make_run()
    first = listing(page_size=2)
    assert (first["count"], len(first["results"])) == (3, 2)
    assert first["next"] and len(listing(page_size=2, page=2)["results"]) == 1


@pytest.mark.parametrize("runs", [2, 12])
def test_the_list_takes_the_same_queries_at_any_size(runs, django_assert_num_queries):
    for _ in range(runs):
        make_evaluation(make_run(), status=Evaluation.Status.DONE)
    with django_assert_num_queries(2):  # the count and the page
        assert listing()["count"] == runs
