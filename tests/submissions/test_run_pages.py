import json
from urllib.parse import urlsplit

import pytest

from submissions.models import Run
from tests.factories import make_evaluation, make_result, make_run, make_superuser, make_user
from tests.submissions.helpers import form, loose_files

pytestmark = pytest.mark.django_db
HIDDEN = {"batch": 4099117, "dim": 12289333}


def test_the_run_list_shows_an_empty_state(client):
    response = client.get("/runs/")
    assert response.status_code == 200
    assert b"No published runs yet" in response.content


def test_the_run_list_shows_published_runs_only(client, django_assert_max_num_queries):
    shown = make_run(published=True)
    hidden = make_run(published=False)
    make_run(published=True)
    with django_assert_max_num_queries(7):  # the page, its count, four filter lists, in grading
        response = client.get("/runs/")
    assert str(shown.uuid).encode() in response.content
    assert str(hidden.uuid).encode() not in response.content


def test_a_published_run_page_shows_gates_and_redacts_held_out_shapes(client):
    run = make_run(published=True)
    make_evaluation(run, result=make_result(hidden_params=HIDDEN))

    response = client.get(run.get_absolute_url())

    page = response.content.decode()
    assert response.status_code == 200
    assert "held-out case 1" in page
    assert "batch=8" in page  # visible shape parameters are public
    assert "4099117" not in page and "12289333" not in page
    assert "correct_visible" in page


def test_a_grader_failure_shows_no_engine_output_on_the_run_page(client):
    run = make_run(published=True)
    stderr = "engine exited with status 1: held-out case 1 ({'batch': 4099117}): boom"
    make_evaluation(run, result={}, status="error", verdict="infra_error", reason=stderr)

    page = client.get(run.get_absolute_url()).content.decode()

    assert "The grader itself failed" in page
    assert "4099117" not in page


def test_a_run_page_escapes_uploaded_text(client):
    run = make_run(published=True, metadata={"<script>": "<img onerror=x>"}, effort="<b>x</b>")
    page = client.get(run.get_absolute_url()).content.decode()
    assert "<script>" not in page and "<img onerror" not in page and "<b>x</b>" not in page


def test_uploaded_names_and_metadata_are_escaped_on_the_run_page(api, registry, client):
    payload = "<img src=x onerror=alert(1)>"
    metadata = json.dumps({payload: payload, "cli_version": payload})
    files = loose_files(transcript_name=[f"{payload}.jsonl"])
    refused = api.post("/api/v1/runs/", form(registry, effort=payload, **files), format="multipart")
    assert refused.status_code == 400 and "Effort is a short name" in str(refused.json())
    files = loose_files(transcript_name=[f"{payload}.jsonl"])  # the refused post read them
    data = form(registry, effort="xhigh", metadata=metadata, **files)
    uploaded = api.post("/api/v1/runs/", data, format="multipart")
    assert uploaded.status_code == 201, uploaded.content
    Run.objects.update(published=True)

    page = client.get(urlsplit(uploaded.json()["url"]).path).content.decode()

    assert payload not in page
    assert "&lt;img src=x onerror=alert(1)&gt;.jsonl" in page


def test_an_unpublished_run_is_visible_to_its_submitter_and_staff_only(client):
    owner = make_user("owner")
    run = make_run(published=False, submitter=owner)

    assert client.get(run.get_absolute_url()).status_code == 404
    client.force_login(make_user("stranger"))
    assert client.get(run.get_absolute_url()).status_code == 404
    client.force_login(owner)
    assert client.get(run.get_absolute_url()).status_code == 200
    client.force_login(make_superuser())
    assert client.get(run.get_absolute_url()).status_code == 200


def test_the_run_page_has_a_constant_number_of_queries(client, django_assert_max_num_queries):
    run = make_run(published=True)
    for _ in range(3):
        make_evaluation(run)
    with django_assert_max_num_queries(7):  # the lineage gradings among them
        assert client.get(run.get_absolute_url()).status_code == 200


def test_a_declared_budget_is_kept_shown_and_given_by_the_api(api, registry, client):
    metadata = json.dumps({"budget_s": 2700, "wall_time_s": 1800.5, "outcome": "ok"})
    uploaded = api.post(
        "/api/v1/runs/", form(registry, metadata=metadata, **loose_files()), format="multipart"
    )
    assert uploaded.status_code == 201, uploaded.content
    run = Run.objects.get()
    assert run.budget_s == 2700 and run.wall_time_s == 1800.5
    assert "budget_s" not in run.figure_sources  # a declaration, not a measured figure
    Run.objects.update(published=True)
    page = client.get(urlsplit(uploaded.json()["url"]).path).content.decode()
    assert "30 min" in page and "budget 45 min" in page
    assert api.get(f"/api/v1/runs/{run.uuid}/").json()["budget_s"] == 2700.0
    for bad in ("45m", -5, 0, True):  # left out: not a number of seconds above zero
        Run.objects.all().delete()
        metadata = json.dumps({"budget_s": bad})
        api.post(
            "/api/v1/runs/", form(registry, metadata=metadata, **loose_files()), format="multipart"
        )
        assert Run.objects.get().budget_s is None, bad
