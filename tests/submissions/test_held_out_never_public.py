"""No public output of any kind (page, export, API response) shows a held-out shape's parameters:
every one of them goes through ``selectors.redacted_shape``."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from submissions.boards.snapshot import refresh_board
from tests.factories import make_evaluation, make_result
from tests.submissions.test_transcript_pages import parsed_run

pytestmark = pytest.mark.django_db
SECRET = {"batch": 4099117, "dim": 12289333}
MARKS = ("4099117", "12289333")


@pytest.fixture
def graded_run():
    run = parsed_run(published=True)
    result = make_result(hidden_params=SECRET)
    hidden = result["shapes"][1]
    hidden |= {
        "baseline_key": "v1:batch=4099117,dim=12289333:h100:2.11:t2",
        "worst_index": [4099117],
    }
    hidden |= {"error": "mismatch on batch=4099117", "tflops": 1.0, "gbps": 2.0}
    # what a held-out shape may show: its kind, whether it is scored, its speedups
    hidden |= {"case": "scale-up", "scored": False, "speedup_library": 0.9, "starter_correct": True}
    make_evaluation(run, result=result)
    refresh_board(hardware_id=run.hardware_id)
    run.refresh_from_db()
    return run


def public_urls(run) -> list[str]:
    hardware, problem = run.hardware.slug, run.problem.slug
    pages = [
        reverse("submissions:home"),
        reverse("submissions:board", kwargs={"hardware": hardware}),
        reverse("submissions:matrix", kwargs={"hardware": hardware}),
        reverse("submissions:charts", kwargs={"hardware": hardware}),
        reverse("submissions:problem-index"),
        reverse("submissions:problem-detail", kwargs={"slug": problem}),
        reverse("submissions:model-detail", kwargs={"slug": run.language_model.slug}),
        reverse("submissions:harness-detail", kwargs={"slug": run.harness.slug}),
        reverse("submissions:run-index"),
        reverse("submissions:run-detail", kwargs={"run_id": run.uuid}),
        reverse("submissions:run-transcript", kwargs={"run_id": run.uuid}),
        reverse("submissions:run-transcript-download", kwargs={"run_id": run.uuid}),
    ]
    board_api = reverse("api:board", kwargs={"hardware": hardware})
    matrix_api = reverse("api:board-matrix", kwargs={"hardware": hardware})
    problem_api = reverse("api:board-problem", kwargs={"hardware": hardware, "problem": problem})
    api = [
        reverse("api:run-list"),
        reverse("api:run-detail", kwargs={"uuid": run.uuid}),
        *(
            f"{url}?format={kind}"
            for url in (board_api, matrix_api, problem_api)
            for kind in ("json", "csv")
        ),
    ]
    return pages + api


def test_no_public_output_contains_a_held_out_shapes_parameters(graded_run, client):
    urls = public_urls(graded_run)
    for url in urls:
        response = APIClient().get(url) if url.startswith("/api/") else client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert not [mark for mark in MARKS if mark in body], url


def test_staff_still_see_the_parameters_in_the_admin(graded_run, admin_client):
    evaluation = graded_run.headline_evaluation
    page = admin_client.get(reverse("admin:submissions_evaluation_change", args=[evaluation.pk]))
    assert "4099117" in page.content.decode()


def test_a_held_out_shapes_kind_and_scored_flag_are_shown_without_its_sizes(graded_run, client):
    page = client.get(reverse("submissions:run-detail", kwargs={"run_id": graded_run.uuid}))
    api = APIClient().get(reverse("api:run-detail", kwargs={"uuid": graded_run.uuid})).json()

    assert "scale-up" in page.content.decode() and "correctness only" in page.content.decode()
    hidden = api["latest_evaluation"]["shapes"][1]
    assert (hidden["params"], hidden["case"], hidden["scored"]) == (None, "scale-up", False)
    assert graded_run.headline_evaluation.result["shapes"][1]["params"] == SECRET  # staff's copy
