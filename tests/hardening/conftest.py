import pytest
from django.core.cache import caches
from rest_framework.test import APIClient

from tests.factories import make_registry, make_token


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def fresh_quotas():
    caches["quotas"].clear()


@pytest.fixture
def registry(db):
    return make_registry()


def token_client(user, token: str | None = None) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token or make_token(user)}")
    return client
