"""The example run's lineage graded by the real engine on CPU (about 6 s a version), and its
convergence curve drawn in headless Chromium."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from submissions import selectors
from submissions.models import HardwareTarget, Run
from submissions.services.lineage import grade_lineage
from submissions.services.registry import engine_problems, seed_registry, sync_problems
from tests.factories import make_token, make_user
from tests.lineage.test_stored_lineage import EXAMPLE
from tests.pages.test_pages_browser import browser, visit  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def example_run(settings, tmp_path) -> Run:
    settings.MEDIA_ROOT = tmp_path / "media"
    seed_registry()
    sync_problems(infos=engine_problems())
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(make_user('alice'))}")
    form = {
        "problem": "softmax",
        "model": "claude-opus-4-5",
        "harness": "claude-code",
        "hardware": "cpu",
        "solution": SimpleUploadedFile("solution.py", (EXAMPLE / "solution.py").read_bytes()),
        "transcript": [
            SimpleUploadedFile("transcript.jsonl", (EXAMPLE / "transcript.jsonl").read_bytes())
        ],
    }
    response = api.post("/api/v1/runs/", form, format="multipart")
    assert response.status_code == 201, response.content
    return Run.objects.get(uuid=response.json()["id"])


def test_the_example_lineage_is_graded_on_cpu_and_its_curve_draws(
    visit,  # noqa: F811  (the imported fixture)
    live_server,
    example_run,
):
    cpu = HardwareTarget.objects.get(slug="cpu")
    headline = Run.objects.get(pk=example_run.pk).headline_evaluation_id
    assert len(grade_lineage(run=example_run, hardware=cpu)) == 3

    run = Run.objects.get(pk=example_run.pk)
    assert (run.headline_evaluation_id, run.status) == (headline, "evaluated")
    curve = selectors.lineage_curve(run)
    assert [(p.index, p.turn, p.verdict) for p in curve.points] == [
        (0, 1, "incorrect"),
        (1, 3, "ok"),  # the starter, plain torch
        (2, 5, "ok"),
    ]
    assert curve.first_correct.index == 1
    assert curve.points[-1].best == max(p.score for p in curve.points[1:])

    visit.goto(live_server.url + run.get_absolute_url(), wait_until="load")
    visit.wait_for_selector("#convergence .chart.drawn .main-svg")
    assert visit.locator("#convergence .scatterlayer .point").count() >= 4
    visit.locator("#convergence .updatemenu-button", has_text="output tokens").click()
    visit.wait_for_selector("#convergence .xtitle:text('output tokens so far')")
    assert visit.seen["errors"] == []
