"""Staff grade a sample of a run's lineage versions; those gradings count nowhere: not the run's
headline, status, publication, history, timing spread, API evaluations or the submitter's quota."""

import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from submissions import selectors
from submissions.models import Evaluation, LineageVersion, Run
from submissions.services import evaluations, queue, quotas
from submissions.services.lineage import grade_lineage, sampled
from tests.factories import make_superuser, make_token, make_user
from tests.workers.conftest import make_cpu_hardware, make_graded_run, make_solution

pytestmark = pytest.mark.django_db

FAKE_ENGINE = Path(__file__).resolve().parents[1] / "workers" / "fake_engine.py"
LINEAGE = Evaluation.Trigger.LINEAGE


@pytest.fixture(autouse=True)
def fake_engine(settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ARENA_ENGINE_COMMAND = [sys.executable, str(FAKE_ENGINE)]
    monkeypatch.setenv("FAKE_ENGINE_LOG", str(tmp_path / "fake-engine.log"))


def make_lineage(run: Run, texts: list[str | None]) -> list[LineageVersion]:
    return [
        LineageVersion.objects.create(
            run=run,
            index=index,
            solution=make_solution(f"{text}# version {index} of {run.uuid}\n") if text else None,
            path="solution.py",
            how="write",
            turn=2 * index + 1,
            output_tokens=100 * (index + 1),
            wall_s=10.0 * (index + 1),
        )
        for index, text in enumerate(texts)
    ]


CONVERGING = [
    "# fake: verdict=incorrect\n",
    "# fake: score=1.5\n",
    "# fake: verdict=runtime_error\n",
    "# fake: score=3\n",
]


def test_each_version_is_graded_and_the_curve_shows_score_best_so_far_and_failures(
    django_capture_on_commit_callbacks,
):
    run = make_graded_run(published=False)
    make_lineage(run, CONVERGING)
    with django_capture_on_commit_callbacks(execute=True):
        created = grade_lineage(run=run, hardware=run.hardware)
    assert len(created) == 4
    curve = selectors.lineage_curve(run)
    assert [(p.index, p.verdict, p.score, p.best) for p in curve.points] == [
        (0, "incorrect", None, None),
        (1, "ok", 1.5, 1.5),
        (2, "runtime_error", None, 1.5),
        (3, "ok", 3.0, 3.0),
    ]
    assert (curve.first_correct.turn, curve.first_correct.output_tokens) == (3, 200)
    assert (curve.versions, curve.waiting, curve.hardware) == (4, 0, run.hardware.name)


def test_lineage_gradings_never_make_the_runs_headline_status_or_publication(
    settings, django_capture_on_commit_callbacks
):
    settings.ARENA_PUBLISH_ON_GRADE = True
    run = make_graded_run("# fake: verdict=incorrect\n", published=False)
    make_lineage(run, CONVERGING)
    with django_capture_on_commit_callbacks(execute=True):
        grade_lineage(run=run, hardware=run.hardware)
    run.refresh_from_db()
    assert (run.status, run.headline_evaluation_id, run.published) == ("received", None, False)
    assert Evaluation.objects.filter(run=run, trigger=LINEAGE, status="done").count() == 4

    with django_capture_on_commit_callbacks(execute=True):
        upload = evaluations.create_evaluation(run=run)
    run.refresh_from_db()
    assert (run.status, run.headline_evaluation_id, run.published) == ("evaluated", upload.pk, True)
    shown = selectors.run_detail_queryset().get(pk=run.pk)
    assert [report.evaluation.pk for report in selectors.evaluation_reports(shown)] == [upload.pk]
    assert selectors.timing_spread(shown) == []  # five gradings timed the shape; one counts


def test_the_api_never_lists_lineage_gradings_among_the_runs_evaluations(
    django_capture_on_commit_callbacks,
):
    owner = make_user("owner")
    run = make_graded_run(submitter=owner)
    make_lineage(run, CONVERGING[:2])
    with django_capture_on_commit_callbacks(execute=True):
        grade_lineage(run=run, hardware=run.hardware)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(owner)}")
    detail = api.get(reverse("api:run-detail", kwargs={"uuid": run.uuid})).json()
    shown = (detail["evaluations"], detail["timing_spread"], detail["status"])
    assert shown == ([], [], "received")


def test_at_most_the_limit_is_sampled_evenly_with_the_first_and_final_version():
    assert sampled(list(range(10)), limit=4) == [0, 3, 6, 9]
    assert sampled(list(range(9)), limit=8) == [0, 1, 2, 3, 5, 6, 7, 8]
    assert sampled(list(range(3)), limit=8) == [0, 1, 2]


def test_the_limit_setting_caps_how_many_versions_are_queued(
    settings, django_capture_on_commit_callbacks
):
    settings.ARENA_LINEAGE_GRADE_LIMIT = 3
    run = make_graded_run()
    versions = make_lineage(run, [f"# step {n}\n" for n in range(7)])
    with django_capture_on_commit_callbacks(execute=False):
        created = grade_lineage(run=run, hardware=run.hardware)
    expected = [versions[i].solution_id for i in (0, 3, 6)]
    assert [evaluation.solution_id for evaluation in created] == expected


def test_content_already_graded_or_not_rebuildable_is_not_queued(
    django_capture_on_commit_callbacks,
):
    run = make_graded_run()
    versions = make_lineage(run, ["# a\n", None, "# b\n"])
    LineageVersion.objects.create(
        run=run, index=3, solution=versions[0].solution, path="solution.py", how="write",
        turn=9, output_tokens=900,
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        first = grade_lineage(run=run, hardware=run.hardware)
        again = grade_lineage(run=run, hardware=run.hardware)
    assert sorted(e.solution_id for e in first) == sorted([v.solution_id for v in versions[::2]])
    assert again == []
    other = make_cpu_hardware()
    with django_capture_on_commit_callbacks(execute=True):
        assert len(grade_lineage(run=run, hardware=other)) == 2
    assert [p.index for p in selectors.lineage_curve(run).points] == [0, 2, 3]


def test_lineage_gradings_are_sent_with_low_priority(
    monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(queue, "enqueue", lambda name, **kwargs: sent.append(kwargs))
    run = make_graded_run()
    make_lineage(run, ["# a\n"])
    with django_capture_on_commit_callbacks(execute=True):
        evaluations.create_evaluation(run=run)
        grade_lineage(run=run, hardware=run.hardware)
    assert [message["priority"] for message in sent] == [None, queue.LOW_PRIORITY]
    assert curve_waiting(run) == 1


def curve_waiting(run: Run) -> int:
    return selectors.lineage_curve(run).waiting


def test_a_submitters_quota_ignores_the_lineage_gradings_of_their_runs(
    settings, django_capture_on_commit_callbacks
):
    settings.ARENA_MAX_QUEUED_EVALUATIONS = 1
    owner = make_user("owner")
    run = make_graded_run(submitter=owner)
    make_lineage(run, ["# a\n", "# b\n"])
    with django_capture_on_commit_callbacks(execute=False):
        grade_lineage(run=run, hardware=run.hardware)
    quotas.check_queued_evaluations(submitter=owner)  # two queued, none of them the owner's
    evaluations.create_evaluation(run=run)
    with pytest.raises(quotas.QuotaExceeded):
        quotas.check_queued_evaluations(submitter=owner)


def test_the_sweeper_starts_the_first_grading_of_a_run_with_only_lineage_gradings(
    django_capture_on_commit_callbacks,
):
    run = make_graded_run()
    make_lineage(run, ["# a\n"])
    with django_capture_on_commit_callbacks(execute=True):
        grade_lineage(run=run, hardware=run.hardware)
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(days=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert evaluations.sweep().started == 1
    assert Run.objects.get(pk=run.pk).status == "evaluated"


def staff_api() -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(make_superuser())}")
    return api


def test_staff_grade_a_lineage_through_the_api(django_capture_on_commit_callbacks):
    run = make_graded_run()
    make_lineage(run, CONVERGING)
    other = make_cpu_hardware()
    url = reverse("api:run-grade-lineage", kwargs={"run_id": run.uuid})
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_api().post(url, {"hardware": other.slug, "limit": 2}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert [(e["trigger"], e["hardware"], e["status"]) for e in body] == [
        ("lineage", other.slug, "queued")
    ] * 2
    assert [p.index for p in selectors.lineage_curve(run).points] == [0, 3]


def test_the_api_refuses_when_no_worker_listens_and_refuses_non_staff():
    run = make_graded_run(hardware=make_cpu_hardware(queue="nobody-listens"))
    make_lineage(run, CONVERGING)
    url = reverse("api:run-grade-lineage", kwargs={"run_id": run.uuid})
    staff = staff_api()
    refused = staff.post(url, {}, format="json")
    assert refused.status_code == 409
    assert "No worker is listening" in refused.json()["detail"]
    member = APIClient()
    member.credentials(HTTP_AUTHORIZATION=f"Token {make_token(make_user('bob'))}")
    assert member.post(url, {}, format="json").status_code == 403
    assert staff.post(url, {"limit": 1}, format="json").status_code == 400
    assert not Evaluation.objects.filter(trigger=LINEAGE).exists()


def test_the_admin_action_grades_the_lineage_of_the_selected_runs(
    client, django_capture_on_commit_callbacks
):
    target = make_cpu_hardware()
    runs = [make_graded_run(hardware=target), make_graded_run(hardware=target)]
    for run in runs:
        make_lineage(run, CONVERGING[:2])
    client.force_login(make_superuser())
    changelist = reverse("admin:submissions_run_changelist")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            changelist,
            {"action": f"grade_lineage_on_{target.slug}", "_selected_action": [r.pk for r in runs]},
            follow=True,
        )
    assert f"Queued 4 lineage versions on {target.name}." in response.content.decode()
    assert set(Evaluation.objects.values_list("trigger", "status")) == {("lineage", "done")}
    assert set(Run.objects.values_list("status", flat=True)) == {"received"}


def test_the_admin_action_refuses_a_target_no_worker_listens_on(client):
    target = make_cpu_hardware(queue="nobody-listens")
    run = make_graded_run(hardware=target)
    make_lineage(run, CONVERGING[:1])
    client.force_login(make_superuser())
    response = client.post(
        reverse("admin:submissions_run_changelist"),
        {"action": f"grade_lineage_on_{target.slug}", "_selected_action": [run.pk]},
        follow=True,
    )
    assert "No worker is listening" in response.content.decode()
    assert not Evaluation.objects.exists()


@pytest.mark.parametrize("versions", [2, 6])
def test_the_run_page_shows_the_curve_in_as_many_queries_whatever_the_versions(
    client, versions, django_capture_on_commit_callbacks, django_assert_num_queries
):
    run = make_graded_run()
    make_lineage(run, (CONVERGING * 2)[:versions])
    with django_capture_on_commit_callbacks(execute=True):
        grade_lineage(run=run, hardware=run.hardware)
    with django_assert_num_queries(6):  # the lineage gradings and the versions among them
        page = client.get(run.get_absolute_url()).content.decode()
    assert "Convergence" in page and 'id="convergence-figure"' in page
    assert "version 1 · turn 3 · 200 output tokens · 20 s" in page


def test_the_problem_page_overlays_the_top_configurations_curves(
    client, django_capture_on_commit_callbacks
):
    run = make_graded_run(published=True)
    make_lineage(run, CONVERGING)
    with django_capture_on_commit_callbacks(execute=True):
        evaluations.enqueue_evaluation(run=run)
        grade_lineage(run=run, hardware=run.hardware)
    url = reverse("submissions:problem-detail", kwargs={"slug": run.problem.slug})
    html = client.get(url, {"hardware": run.hardware.slug}).content.decode()
    assert 'data-figure="overlay-figure"' in html
    assert "How the top configurations got there" in html
    curves = selectors.lineage_overlay(runs=[(str(run.uuid), "label")], hardware=run.hardware)
    assert [p.best for p in curves[0].curve.points] == [None, 1.5, 1.5, 3.0]


def test_a_problem_page_without_graded_lineages_has_no_overlay(client):
    run = make_graded_run(published=True)
    url = reverse("submissions:problem-detail", kwargs={"slug": run.problem.slug})
    html = client.get(url, {"hardware": run.hardware.slug}).content.decode()
    assert "overlay-figure" not in html
