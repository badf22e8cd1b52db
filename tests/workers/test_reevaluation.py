"""Maintainers re-grade runs from the admin and the API; earlier evaluations stay as history."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from submissions.models import Evaluation
from tests.factories import make_evaluation, make_superuser, make_token, make_user
from tests.workers.conftest import make_cpu_hardware, make_graded_run

pytestmark = pytest.mark.django_db


def test_the_admin_action_creates_new_evaluations_and_keeps_the_old_ones(
    client, fake_engine, django_capture_on_commit_callbacks
):
    runs = [make_graded_run(), make_graded_run()]
    old = [make_evaluation(run, verdict="ok") for run in runs]
    target = make_cpu_hardware()
    client.force_login(make_superuser())
    changelist = reverse("admin:submissions_run_changelist")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            changelist,
            {"action": f"reevaluate_on_{target.slug}", "_selected_action": [r.pk for r in runs]},
            follow=True,
        )
    assert f"Queued 2 evaluations on {target.name}." in response.content.decode()
    new = Evaluation.objects.exclude(pk__in=[e.pk for e in old])
    assert (
        sorted(new.values_list("status", "trigger", "hardware_id"))
        == [("done", "reevaluate", target.pk)] * 2
    )
    assert Evaluation.objects.filter(pk__in=[e.pk for e in old]).count() == 2
    assert set(new.values_list("triggered_by__is_superuser", flat=True)) == {True}


def test_the_reevaluate_action_is_offered_per_hardware_target(client):
    target = make_cpu_hardware()
    make_graded_run(hardware=target)
    client.force_login(make_superuser())
    page = client.get(reverse("admin:submissions_run_changelist")).content.decode()
    assert f"Re-evaluate on {target.name}" in page
    # the list shows each run's headline verdict and score, sortable
    assert "?o=8" in page and ">Verdict</a>" in page and ">Score</a>" in page


def test_staff_reevaluate_a_run_through_the_api_and_see_its_history(
    fake_engine, django_capture_on_commit_callbacks
):
    run = make_graded_run("# fake: verdict=incorrect\n")
    make_evaluation(run, verdict="ok")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(make_superuser())}")
    url = reverse("api:run-reevaluate", kwargs={"run_id": run.uuid})
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(url, {"hardware": run.hardware.slug}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()[0]["status"] == "queued"
    detail = api.get(reverse("api:run-detail", kwargs={"uuid": run.uuid})).json()
    assert detail["status"] == "evaluated"
    assert [e["verdict"] for e in detail["evaluations"]] == ["incorrect", "ok"]
    assert [e["trigger"] for e in detail["evaluations"]] == ["reevaluate", "upload"]


def test_only_staff_may_reevaluate_through_the_api():
    run = make_graded_run()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(make_user())}")
    response = api.post(reverse("api:run-reevaluate", kwargs={"run_id": run.uuid}))
    assert response.status_code == 403
    assert not Evaluation.objects.exists()
