"""The real Django server (pytest-django's live_server) with the registry and a token; the
engine is the workers' fake one, so a grade takes a fraction of a second."""

import shutil
import sys
from pathlib import Path

import pytest

from submissions.services.registry import ensure_cpu_target, seed_registry
from tests.factories import make_problem, make_token, make_user

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "softmax-run"
FAKE_ENGINE = Path(__file__).resolve().parents[1] / "workers" / "fake_engine.py"


@pytest.fixture(autouse=True)
def isolated_config(tmp_path, monkeypatch):
    for name in ("ARENA_URL", "ARENA_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ARENA_CONFIG", str(tmp_path / "config" / "arena.json"))
    return tmp_path / "config" / "arena.json"


@pytest.fixture
def server(live_server, settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ARENA_ENGINE_COMMAND = [sys.executable, str(FAKE_ENGINE)]
    monkeypatch.setenv("FAKE_ENGINE_LOG", str(tmp_path / "fake-engine.log"))
    seed_registry()
    ensure_cpu_target()
    make_problem("softmax")
    return live_server


@pytest.fixture
def token(server) -> str:
    return make_token(make_user("alice"))


@pytest.fixture
def run_folder(tmp_path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "run"))
