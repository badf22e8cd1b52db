"""Users made with create_api_token have no password: the browsable API signs them in with the
token, so its upload form works. Staff tokens never open a session; the form is CSRF-protected."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from submissions.services.tokens import issue_token
from tests.factories import make_superuser, make_token

pytestmark = pytest.mark.django_db

LOGIN = "/api/v1/auth/token-login/"
RUNS = "/api/v1/runs/"


def passwordless_token() -> str:
    user = get_user_model().objects.create_user(username="carol")  # as create_api_token does
    assert not user.has_usable_password()
    _, plaintext = issue_token(user=user, name="cli")
    return plaintext


def test_a_token_signs_the_browser_in_and_the_upload_form_appears(client):
    anonymous = client.get(RUNS, HTTP_ACCEPT="text/html").content.decode()
    assert "Log in with your API token" in anonymous and 'name="solution"' not in anonymous
    response = client.post(LOGIN, {"token": passwordless_token(), "next": RUNS})
    assert (response.status_code, response.url) == (302, RUNS)
    page = client.get(RUNS, HTTP_ACCEPT="text/html").content.decode()
    assert 'name="solution"' in page and "carol" in page


def test_a_wrong_token_is_refused_with_a_message(client):
    response = client.post(LOGIN, {"token": "ka_nope_nope"})
    assert response.status_code == 200
    assert "Invalid, expired or revoked token." in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_staff_token_never_opens_a_session(client):
    response = client.post(LOGIN, {"token": make_token(make_superuser())})
    assert "Staff sign in with their password" in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert client.get(reverse("admin:index")).status_code == 302


def test_the_form_needs_its_csrf_token():
    strict = Client(enforce_csrf_checks=True)
    assert strict.post(LOGIN, {"token": passwordless_token()}).status_code == 403
    assert "_auth_user_id" not in strict.session


def test_a_foreign_next_address_leads_to_the_run_list_instead(client):
    response = client.post(LOGIN, {"token": passwordless_token(), "next": "https://evil.example/"})
    assert response.url == reverse("api:run-list")


def test_the_password_login_page_points_to_the_token_login(client):
    page = client.get("/api/v1/auth/login/?next=/api/v1/runs/").content.decode()
    assert 'href="/api/v1/auth/token-login/?next=/api/v1/runs/"' in page
