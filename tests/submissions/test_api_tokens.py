import hashlib
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from submissions.models import ApiToken
from submissions.services.tokens import find_active_token, revoke_token
from tests.factories import make_token, make_user
from tests.submissions.helpers import assert_nothing_stored, form, loose_files

pytestmark = pytest.mark.django_db
URL = "/api/v1/runs/"


def post_with(registry, header: str | None):
    client = APIClient()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    return client.post(URL, form(registry, **loose_files()), format="multipart")


def test_an_upload_without_a_token_is_unauthorized(registry, media_root):
    response = post_with(registry, None)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert_nothing_stored(media_root)


@pytest.mark.parametrize("header", ["Token ka_000000000000_wrong", "Token garbage", "Token a b"])
def test_a_wrong_token_is_unauthorized(registry, media_root, header):
    make_token(make_user())
    assert post_with(registry, header).status_code == 401
    assert_nothing_stored(media_root)


def test_a_revoked_token_is_unauthorized(registry, media_root):
    plaintext = make_token(make_user())
    revoke_token(token=ApiToken.objects.get())
    assert post_with(registry, f"Token {plaintext}").status_code == 401
    assert_nothing_stored(media_root)


def test_a_token_of_an_inactive_user_is_unauthorized(registry, media_root):
    user = make_user()
    plaintext = make_token(user)
    user.is_active = False
    user.save()
    assert post_with(registry, f"Token {plaintext}").status_code == 401
    assert_nothing_stored(media_root)


def test_a_bearer_token_is_accepted_and_its_use_recorded(registry):
    plaintext = make_token(make_user())
    assert post_with(registry, f"Bearer {plaintext}").status_code == 201
    assert ApiToken.objects.get().last_used_at is not None


def test_only_a_hash_of_the_token_is_stored():
    plaintext = make_token(make_user())
    token = ApiToken.objects.get()
    assert plaintext not in {token.prefix, token.digest, token.name}
    assert token.digest == hashlib.sha256(plaintext.encode()).hexdigest()
    assert find_active_token(plaintext) == token


def test_a_session_upload_without_a_csrf_token_is_forbidden(registry, media_root):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(make_user())
    response = client.post(URL, form(registry, **loose_files()), format="multipart")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert_nothing_stored(media_root)


def test_create_api_token_prints_a_working_token_on_its_last_line(capsys, registry):
    call_command("create_api_token", "agent-bot")
    token = capsys.readouterr().out.strip().splitlines()[-1]

    assert find_active_token(token).user.username == "agent-bot"
    assert post_with(registry, f"Token {token}").status_code == 201


def test_create_api_token_reuses_an_existing_user(capsys):
    user = make_user("bob")
    call_command("create_api_token", "bob", "--name", "laptop")
    assert ApiToken.objects.get().user == user
    assert ApiToken.objects.get().name == "laptop"


def test_an_expired_token_is_unauthorized(registry, capsys, media_root):
    call_command("create_api_token", "bot", "--days", "1")
    token = capsys.readouterr().out.strip().splitlines()[-1]
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert post_with(registry, f"Token {token}").status_code == 401
    assert_nothing_stored(media_root)
