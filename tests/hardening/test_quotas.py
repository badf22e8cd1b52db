"""Quotas: uploads and re-evaluations per token (429 with Retry-After), and the cap on the
evaluations one submitter may have waiting (429, nothing stored)."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from arena_web.env import env_rate
from submissions.models import Evaluation, Run
from tests.factories import make_evaluation, make_run, make_superuser, make_user
from tests.hardening.conftest import token_client
from tests.submissions.helpers import TRANSCRIPT, form, stored_files, upload

pytestmark = pytest.mark.django_db
RUNS = reverse("api:run-list")


def run_body(registry, n: int) -> dict:
    solution = upload("solution.py", f"# attempt {n}\n".encode())
    return form(registry, solution=solution, transcript=[upload("transcript.jsonl", TRANSCRIPT)])


def post_runs(client, registry, count: int, start: int = 0) -> list:
    return [client.post(RUNS, run_body(registry, n)) for n in range(start, start + count)]


def assert_throttled(response, *, period_s: int) -> None:
    assert response.status_code == 429
    assert response.json()["detail"].startswith("Request was throttled.")
    assert 0 < int(response["Retry-After"]) <= period_s


def test_uploads_under_the_rate_pass_and_the_next_one_gets_429(settings, registry):
    settings.ARENA_UPLOAD_RATE = "2/hour"
    client = token_client(make_user())
    first, second, third = post_runs(client, registry, 3)
    assert (first.status_code, second.status_code) == (201, 201)
    assert_throttled(third, period_s=3600)
    assert Run.objects.count() == 2


def test_each_token_has_its_own_upload_budget(settings, registry):
    settings.ARENA_UPLOAD_RATE = "1/minute"
    alice = make_user()
    spent, fresh = token_client(alice), token_client(alice)
    other = token_client(make_user("bob"))
    assert [r.status_code for r in post_runs(spent, registry, 2)] == [201, 429]
    assert fresh.post(RUNS, run_body(registry, 10)).status_code == 201
    assert other.post(RUNS, run_body(registry, 11)).status_code == 201


def test_the_upload_rate_can_be_switched_off(settings, registry):
    settings.ARENA_UPLOAD_RATE = None
    responses = post_runs(token_client(make_user()), registry, 4)
    assert [r.status_code for r in responses] == [201] * 4


def test_reads_are_not_counted_against_the_upload_rate(settings, registry):
    settings.ARENA_UPLOAD_RATE = "1/hour"
    client = token_client(make_user())
    assert {client.get(RUNS).status_code for _ in range(3)} == {200}
    assert client.post(RUNS, run_body(registry, 0)).status_code == 201


def test_an_unreachable_quota_cache_lets_uploads_through(settings, registry):
    settings.ARENA_UPLOAD_RATE = "1/hour"
    settings.CACHES = settings.CACHES | {
        "quotas": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
        }
    }
    responses = post_runs(token_client(make_user()), registry, 2)
    assert [r.status_code for r in responses] == [201, 201]


def test_reevaluations_over_the_rate_get_429_per_token(settings, registry):
    settings.ARENA_REEVALUATE_RATE = "1/minute"
    run = make_run(hardware=registry["hardware"])
    staff = make_superuser()
    url = reverse("api:run-reevaluate", kwargs={"run_id": run.uuid})
    first_token, second_token = token_client(staff), token_client(staff)
    assert first_token.post(url, {"force": True}).status_code == 202
    assert_throttled(first_token.post(url, {"force": True}), period_s=60)
    assert second_token.post(url, {"force": True}).status_code == 202
    assert run.evaluations.count() == 2


def waiting(submitter, hardware, count: int, status=Evaluation.Status.QUEUED) -> None:
    for _ in range(count):
        make_evaluation(make_run(submitter=submitter, hardware=hardware), status=status)


def test_an_upload_over_the_queued_evaluation_cap_is_refused_and_stores_nothing(
    settings, registry, media_root
):
    settings.ARENA_MAX_QUEUED_EVALUATIONS = 2
    alice = make_user()
    waiting(alice, registry["hardware"], 1)
    waiting(alice, registry["hardware"], 1, status=Evaluation.Status.RUNNING)
    runs_before, files_before = Run.objects.count(), stored_files(media_root)
    response = token_client(alice).post(RUNS, run_body(registry, 0))
    assert response.status_code == 429 and response["Retry-After"] == "60"
    assert response.json()["detail"] == (
        "You have 2 evaluations waiting or running; the limit is 2. "
        "Nothing was stored: upload again once some of them are graded."
    )
    assert Run.objects.count() == runs_before
    assert stored_files(media_root) == files_before


def test_uploads_under_the_cap_pass_and_finished_or_foreign_evaluations_do_not_count(
    settings, registry
):
    settings.ARENA_MAX_QUEUED_EVALUATIONS = 2
    alice = make_user()
    waiting(alice, registry["hardware"], 1)
    waiting(alice, registry["hardware"], 3, status=Evaluation.Status.DONE)
    waiting(make_user("bob"), registry["hardware"], 5)
    assert token_client(alice).post(RUNS, run_body(registry, 0)).status_code == 201


def test_an_identical_re_upload_over_the_cap_returns_the_earlier_run(settings, registry):
    settings.ARENA_MAX_QUEUED_EVALUATIONS = 1
    client = token_client(make_user())
    created = client.post(RUNS, run_body(registry, 0))
    run = Run.objects.get(uuid=created.json()["id"])
    make_evaluation(run, status=Evaluation.Status.QUEUED)
    again = client.post(RUNS, run_body(registry, 0))
    assert (created.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == created.json()["id"]
    assert client.post(RUNS, run_body(registry, 1)).status_code == 429


def test_staff_uploads_are_not_capped(settings, registry):
    settings.ARENA_MAX_QUEUED_EVALUATIONS = 1
    staff = make_superuser()
    waiting(staff, registry["hardware"], 3)
    client = token_client(staff)
    assert client.post(RUNS, run_body(registry, 0)).status_code == 201


@pytest.mark.parametrize(
    ("raw", "rate"), [("", "60/hour"), ("10/min", "10/min"), ("5 / s", "5/s"), ("off", None)]
)
def test_rates_are_read_from_the_environment(monkeypatch, raw, rate):
    monkeypatch.setenv("ARENA_UPLOAD_RATE", raw)
    assert env_rate("ARENA_UPLOAD_RATE", "60/hour") == rate


@pytest.mark.parametrize("raw", ["ten/hour", "10 per hour", "10/fortnight", "10"])
def test_a_rate_that_is_not_one_fails_loudly(monkeypatch, raw):
    monkeypatch.setenv("ARENA_UPLOAD_RATE", raw)
    with pytest.raises(ImproperlyConfigured, match="ARENA_UPLOAD_RATE"):
        env_rate("ARENA_UPLOAD_RATE", "60/hour")


def test_admin_sign_in_attempts_past_the_rate_get_429_per_address(settings, client):
    settings.ARENA_LOGIN_RATE = "3/minute"
    make_superuser()
    attempt = {"username": "nobody", "password": "wrong"}
    answers = [client.post("/admin/login/", attempt).status_code for _ in range(3)]
    assert answers == [200, 200, 200]  # the form again, with its error
    refused = client.post("/admin/login/", attempt)
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 60
    assert "Too many sign-in attempts" in refused.content.decode()
    assert client.get("/admin/login/").status_code == 200  # reading the form is not counted
    other = client.post("/admin/login/", attempt, REMOTE_ADDR="203.0.113.9")
    assert other.status_code == 200  # another address has its own budget
