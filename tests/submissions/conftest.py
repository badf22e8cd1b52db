import pytest
from rest_framework.test import APIClient

from tests.factories import make_registry, make_token, make_user


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def registry(db):
    return make_registry()


@pytest.fixture
def uploader(db):
    return make_user("uploader")


@pytest.fixture
def api(uploader):
    return _token_client(uploader)


@pytest.fixture
def other_api(db):
    """A second submitter's client."""
    return _token_client(make_user("other"))


def _token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {make_token(user)}")
    return client
