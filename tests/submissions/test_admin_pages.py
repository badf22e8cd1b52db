import html
import re

import pytest
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from submissions.models import (
    ApiToken,
    BaselineTiming,
    Campaign,
    Evaluation,
    HardwareTarget,
    Harness,
    LanguageModel,
    Problem,
    RetiredProblemVersion,
    Run,
    RunForReview,
    Solution,
)
from submissions.services.runs import create_run
from submissions.uploads import IncomingFile, RunFiles
from tests.factories import make_evaluation, make_run, make_superuser, make_token, make_user
from tests.submissions.helpers import loose_files

pytestmark = pytest.mark.django_db
MODELS = [
    LanguageModel,
    Harness,
    HardwareTarget,
    Problem,
    Run,
    Evaluation,
    Solution,
    BaselineTiming,
    ApiToken,
    RunForReview,
    RetiredProblemVersion,
    Campaign,
]


@pytest.fixture
def admin_client(client, registry):
    client.force_login(make_superuser())
    uploaded = loose_files()
    files = RunFiles(
        solution=IncomingFile("solution.py", uploaded["solution"]),
        transcripts=[IncomingFile("transcript.jsonl", uploaded["transcript"][0])],
    )
    run, _ = create_run(
        submitter=make_user(),
        problem=registry["problem"],
        language_model=registry["model"],
        harness=registry["harness"],
        hardware=registry["hardware"],
        files=files,
    )
    make_evaluation(run)
    make_token(make_user("bot"))
    BaselineTiming.objects.create(
        problem_version="v", shape_key="n=1", gpu_model="h100-sxm", torch_version="2.8"
    )
    Run.objects.filter(pk=run.pk).update(flags=[{"code": "score_gap", "message": "gap"}])
    RetiredProblemVersion.objects.create(
        problem=run.problem, version=run.problem_version, note="wrong", retired_by=make_user("m")
    )
    campaign = Campaign.objects.create(
        slug="nightly", name="Nightly", hardware=registry["hardware"], budget_s=2700
    )
    campaign.harnesses.add(registry["harness"])
    return client


def admin_url(model, view: str, *args) -> str:
    return reverse(f"admin:submissions_{model._meta.model_name}_{view}", args=args)


def test_every_registered_model_is_covered_here():
    registered = {m for m in admin.site._registry if m._meta.app_label == "submissions"}
    assert registered == set(MODELS)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_admin_changelist_and_change_page_loads(admin_client, model):
    row = model.objects.first()
    assert admin_client.get(admin_url(model, "changelist")).status_code == 200
    assert admin_client.get(admin_url(model, "change", row.pk)).status_code == 200


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_admin_search_finds_a_row_by_its_first_search_field(admin_client, model):
    row = model.objects.first()
    value = row
    for part in admin.site._registry[model].search_fields[0].split("__"):
        value = getattr(value, part)
    response = admin_client.get(admin_url(model, "changelist"), {"q": str(value)[:8]})
    assert response.status_code == 200
    assert row in response.context["cl"].result_list


def changelist_queries(client, model) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(admin_url(model, "changelist")).status_code == 200
    return len(queries)


@pytest.mark.parametrize("model", [Run, Evaluation], ids=lambda m: m.__name__)
def test_changelist_queries_do_not_grow_with_rows(admin_client, model):
    few = changelist_queries(admin_client, model)
    for _ in range(20):
        make_evaluation(make_run())
    assert changelist_queries(admin_client, model) == few <= 15


def test_the_evaluation_change_page_shows_held_out_parameters_to_staff(admin_client):
    evaluation = Evaluation.objects.first()
    page = admin_client.get(admin_url(Evaluation, "change", evaluation.pk)).content.decode()
    assert "4099117" in page


def test_staff_see_the_full_reason_of_a_grader_failure(admin_client):
    stderr = "engine exited with status 1: held-out case 1 ({'batch': 4099117}): boom"
    evaluation = make_evaluation(
        Run.objects.get(), result={}, status="error", verdict="infra_error", reason=stderr
    )
    page = admin_client.get(admin_url(Evaluation, "change", evaluation.pk)).content.decode()
    assert "boom" in page


def test_problems_are_read_only_in_the_admin(admin_client):
    problem = Problem.objects.first()
    assert admin_client.get(admin_url(Problem, "add")).status_code == 403
    admin_client.post(admin_url(Problem, "change", problem.pk), {"title": "changed"})
    problem.refresh_from_db()
    assert problem.title != "changed"


def test_the_publish_action_publishes_runs(admin_client):
    run = Run.objects.get()
    admin_client.post(
        admin_url(Run, "changelist"), {"action": "publish", "_selected_action": [run.pk]}
    )
    run.refresh_from_db()
    assert run.published


def test_the_solution_page_shows_its_source_escaped(admin_client):
    solution = Solution.objects.get()
    page = admin_client.get(admin_url(Solution, "change", solution.pk)).content.decode()
    assert "class ModelNew(torch.nn.Module):" in page


def change_form_post(admin_client, run, **fields) -> dict:
    """The run's change form as the browser posts it: its hidden inputs (the inline formsets'
    management data and existing rows' ids) and text areas, then ``fields``."""
    page = admin_client.get(admin_url(Run, "change", run.pk)).content.decode()
    hidden = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page)
    areas = re.findall(r'<textarea name="([^"]+)"[^>]*>\n?(.*?)</textarea>', page, re.S)
    posted = [(name, html.unescape(value)) for name, value in hidden + areas]
    return {name: value for name, value in posted if name != "csrfmiddlewaretoken"} | fields


def test_publishing_from_the_change_form_goes_through_the_service(admin_client, monkeypatch):
    refreshed = []
    monkeypatch.setattr(
        "submissions.services.queue.refresh_boards_on_commit",
        lambda *, hardware_ids: refreshed.extend(hardware_ids),
    )
    run = Run.objects.get()
    response = admin_client.post(
        admin_url(Run, "change", run.pk), change_form_post(admin_client, run, published="on")
    )
    assert response.status_code == 302, _form_errors(response)
    run.refresh_from_db()
    assert run.published and refreshed == [run.hardware_id]  # the board it counts on


def test_an_annotation_added_in_the_admin_is_written_by_the_audit_service(
    admin_client, monkeypatch
):
    from submissions.models import Annotation
    from submissions.services import audit

    calls = []
    real = audit.annotate
    monkeypatch.setattr(audit, "annotate", lambda **kw: calls.append(kw) or real(**kw))
    run = Run.objects.get()
    data = change_form_post(admin_client, run)
    prefix = next(k for k in data if k.endswith("-TOTAL_FORMS") and "annotation" in k)
    prefix = prefix.removesuffix("-TOTAL_FORMS")
    data |= {f"{prefix}-TOTAL_FORMS": "1", f"{prefix}-0-verdict": "legit"}
    data |= {
        f"{prefix}-0-comment": "read it",
        f"{prefix}-0-evidence": "[]",
        f"{prefix}-0-run": run.pk,
    }
    response = admin_client.post(admin_url(Run, "change", run.pk), data)
    assert response.status_code == 302, _form_errors(response)
    (annotation,) = Annotation.objects.filter(run=run)
    assert (annotation.verdict, annotation.comment, annotation.author.is_staff) == (
        "legit", "read it", True
    )  # fmt: skip
    assert len(calls) == 1


def test_a_campaign_is_created_and_changed_in_the_admin_through_the_service(admin_client, registry):
    form = {
        "name": "Weekly on the H100",
        "slug": "weekly-h100",
        "hardware": registry["hardware"].pk,
        "budget_s": "1800",
        "harnesses": [registry["harness"].pk],
        "language_models": [registry["model"].pk],
        "efforts": "",
        "problems": [registry["problem"].pk],
        "repeats": "2",
        "launches-TOTAL_FORMS": "0",
        "launches-INITIAL_FORMS": "0",
    }
    response = admin_client.post(reverse("admin:submissions_campaign_add"), form)

    assert response.status_code == 302, _form_errors(response)
    campaign = Campaign.objects.get(slug="weekly-h100")
    assert campaign.created_by.is_superuser
    assert list(campaign.problems.all()) == [registry["problem"]]
    url = reverse("admin:submissions_campaign_change", args=[campaign.pk])
    assert admin_client.post(url, form | {"repeats": "3"}).status_code == 302
    assert Campaign.objects.get(pk=campaign.pk).repeats == 3


def test_a_tokens_label_and_expiry_are_edited_and_its_holder_can_be_deleted(admin_client):
    holder = make_user("holder")
    make_token(holder)
    token = ApiToken.objects.get(user=holder)
    url = reverse("admin:submissions_apitoken_change", args=[token.pk])
    form = {"name": "ci host", "expires_at_0": "2030-01-02", "expires_at_1": "03:04:05"}

    assert admin_client.post(url, form).status_code == 302
    token.refresh_from_db()
    assert token.name == "ci host" and token.expires_at.year == 2030

    delete = reverse("admin:auth_user_delete", args=[holder.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 302
    assert not ApiToken.objects.filter(pk=token.pk).exists()


def _form_errors(response) -> str:
    """What an admin form refused, for a failing assertion's message."""
    context = response.context or {}
    form = context.get("adminform")
    inlines = [formset.formset.errors for formset in context.get("inline_admin_formsets", [])]
    return f"form: {form.form.errors if form else None}; inlines: {inlines}"
