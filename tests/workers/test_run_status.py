"""One rule for a run's status and headline; re-grades refused where no worker listens."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from submissions.models import Evaluation, Run
from submissions.services import evaluations, queue
from tests.factories import make_evaluation, make_hardware, make_superuser, make_token
from tests.workers.conftest import make_graded_run

pytestmark = pytest.mark.django_db


def staff_api() -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(make_superuser())}")
    return api


def test_a_grader_failure_on_another_target_never_replaces_a_good_headline():
    run = make_graded_run()
    graded = make_evaluation(run, verdict="ok")
    make_evaluation(
        run, hardware=make_hardware("h100-sxm"), status=Evaluation.Status.ERROR, result={}
    )
    run.refresh_from_db()
    assert (run.status, run.headline_evaluation) == (Run.Status.EVALUATED, graded)


def test_a_run_shows_failed_only_when_its_own_headline_is_a_grader_failure():
    run = make_graded_run()
    failed = make_evaluation(run, status=Evaluation.Status.ERROR, verdict="infra_error", result={})
    run.refresh_from_db()
    assert (run.status, run.headline_evaluation) == (Run.Status.FAILED, failed)


def test_a_regrade_in_flight_shows_until_it_finishes_and_then_heads_the_run():
    run = make_graded_run()
    make_evaluation(run, verdict="ok")
    pending = make_evaluation(run, status=Evaluation.Status.QUEUED, finished_at=None, result={})
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED
    Evaluation.objects.filter(pk=pending.pk).update(status=Evaluation.Status.DONE, verdict="ok")
    evaluations.refresh_run(run_id=run.pk)
    run.refresh_from_db()
    assert (run.status, run.headline_evaluation_id) == (Run.Status.EVALUATED, pending.pk)


def test_the_api_refuses_a_regrade_on_a_target_without_a_worker():
    run = make_graded_run()
    h100 = make_hardware("h100-sxm", name="NVIDIA H100 SXM")
    url = reverse("api:run-reevaluate", kwargs={"run_id": run.uuid})
    response = staff_api().post(url, {"hardware": h100.slug}, format="json")
    assert response.status_code == 409
    assert (
        "No worker is listening on NVIDIA H100 SXM's queue (gpu.h100-sxm)"
        in (response.json()["detail"])
    )
    assert not Evaluation.objects.exists()


def test_a_forced_regrade_is_queued_and_answers_as_queued(monkeypatch):
    monkeypatch.setattr(queue, "enqueue", lambda *args, **kwargs: None)  # no worker at all
    run = make_graded_run()
    make_evaluation(run, verdict="ok")
    h100 = make_hardware("h100-sxm")
    url = reverse("api:run-reevaluate", kwargs={"run_id": run.uuid})
    response = staff_api().post(url, {"hardware": h100.slug, "force": True}, format="json")
    assert response.status_code == 202, response.content
    (queued,) = response.json()
    assert (queued["status"], queued["shapes"], queued["gates"]) == ("queued", [], [])


def test_the_admin_refuses_a_regrade_on_a_target_without_a_worker(client):
    run = make_graded_run()
    h100 = make_hardware("h100-sxm", name="NVIDIA H100 SXM")
    client.force_login(make_superuser())
    response = client.post(
        reverse("admin:submissions_run_changelist"),
        {"action": f"reevaluate_on_{h100.slug}", "_selected_action": [run.pk]},
        follow=True,
    )
    assert "No worker is listening on NVIDIA H100 SXM" in response.content.decode()
    assert not Evaluation.objects.exists()


def test_workers_are_asked_which_queues_they_consume(monkeypatch):
    queue.current_app.conf.task_always_eager = False  # tests/conftest.py restores it

    class Inspect:
        def active_queues(self):
            return {"gpu-0@host": [{"name": "gpu.h100-sxm"}], "cpu@host": [{"name": "cpu"}]}

    monkeypatch.setattr(queue.current_app.control, "inspect", lambda timeout: Inspect())
    served, unserved = make_hardware("h100-sxm"), make_hardware("h200")
    assert queue.unserved([served, unserved]) == [unserved]
