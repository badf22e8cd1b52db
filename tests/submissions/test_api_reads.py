import pytest
from rest_framework.test import APIClient

from submissions.models import Evaluation
from tests.factories import (
    make_evaluation,
    make_problem,
    make_result,
    make_run,
    make_token,
    make_user,
)

pytestmark = pytest.mark.django_db


def test_a_new_run_has_no_evaluation_yet(registry):
    run = make_run(published=True)
    body = APIClient().get(f"/api/v1/runs/{run.uuid}/").json()

    assert body["id"] == str(run.uuid)
    assert body["status"] == "received"
    assert body["latest_evaluation"] is None
    assert body["evaluations"] == []
    assert (body["problem"], body["model"], body["hardware"]) == (
        registry["problem"].slug,
        registry["model"].slug,
        registry["hardware"].slug,
    )


def test_run_status_shows_the_latest_evaluation_without_hidden_parameters(registry):
    run = make_run(published=True)
    make_evaluation(run, status=Evaluation.Status.ERROR, verdict="infra_error")
    make_evaluation(run, result=make_result(hidden_params={"n": 77777}))

    response = APIClient().get(f"/api/v1/runs/{run.uuid}/")

    body = response.json()
    assert len(body["evaluations"]) == 2
    assert body["latest_evaluation"]["verdict"] == "ok"
    shapes = body["latest_evaluation"]["shapes"]
    assert [s["label"] for s in shapes] == ["visible 1", "held-out case 1"]
    assert shapes[1]["params"] is None
    assert "77777" not in response.content.decode()


def test_run_status_shows_no_engine_output_for_a_grader_failure(registry):
    run = make_run(published=True)
    stderr = "engine exited with status 1: held-out case 1 ({'batch': 4099117}): boom"
    make_evaluation(run, result={}, status="error", verdict="infra_error", reason=stderr)

    response = APIClient().get(f"/api/v1/runs/{run.uuid}/")

    assert response.json()["latest_evaluation"]["reason"].startswith("The grader itself failed")
    assert "4099117" not in response.content.decode()


def test_run_status_has_a_constant_number_of_queries(registry, django_assert_max_num_queries):
    run = make_run(published=True)
    for _ in range(3):
        make_evaluation(run)
    with django_assert_max_num_queries(5):
        assert APIClient().get(f"/api/v1/runs/{run.uuid}/").status_code == 200


def test_an_unpublished_run_is_hidden_from_others_in_the_api(registry):
    owner = make_user("owner")
    run = make_run(published=False, submitter=owner)
    assert APIClient().get(f"/api/v1/runs/{run.uuid}/").status_code == 404
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {make_token(owner)}")
    assert client.get(f"/api/v1/runs/{run.uuid}/").status_code == 200


@pytest.mark.parametrize(
    ("resource", "field"),
    [
        ("problems", "problem"),
        ("models", "model"),
        ("harnesses", "harness"),
        ("hardware", "hardware"),
    ],
)
def test_registry_lists_and_details_are_public(registry, resource, field):
    slug = registry[field].slug
    listing = APIClient().get(f"/api/v1/{resource}/").json()
    detail = APIClient().get(f"/api/v1/{resource}/{slug}/")

    assert slug in [item["slug"] for item in listing]
    assert detail.status_code == 200
    assert detail.json()["slug"] == slug


@pytest.mark.parametrize("resource", ["problems", "models", "harnesses", "hardware"])
def test_a_registry_slug_with_a_nul_character_is_not_found(registry, resource):
    assert APIClient().get(f"/api/v1/{resource}/a%00b/").status_code == 404


def test_inactive_problems_are_not_listed(db):
    make_problem("retired", is_active=False)
    assert APIClient().get("/api/v1/problems/").json() == []


def test_the_openapi_schema_describes_the_upload(client):
    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    schema = response.json()
    assert response.status_code == 200
    upload = schema["paths"]["/api/v1/runs/"]["post"]
    assert "multipart/form-data" in upload["requestBody"]["content"]
    assert upload["description"].startswith("Upload one agent run")
    assert {"200", "201"} <= set(upload["responses"])


def test_the_api_docs_page_loads_only_self_hosted_assets(client):
    response = client.get("/api/v1/docs/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "/static/drf_spectacular_sidecar/" in page
    for cdn in ("cdn.jsdelivr", "unpkg.com", "cdnjs", "googleapis"):
        assert cdn not in page
