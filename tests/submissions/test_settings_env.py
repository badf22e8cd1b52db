import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from arena_web.env import env_bool, env_int, env_list

ROOT = Path(__file__).resolve().parents[2]
STRONG_KEY = "k7#Qz9!vR2@pL5$wX8^mN3&bT6*cY1(dF4)gH0_jK2+sA9=eU7"


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("off", False), ("", True)])
def test_env_bool_reads_common_spellings(monkeypatch, raw, value):
    monkeypatch.setenv("FLAG", raw)
    assert env_bool("FLAG", True) is value


def test_env_helpers_reject_values_they_cannot_read(monkeypatch):
    monkeypatch.setenv("FLAG", "maybe")
    monkeypatch.setenv("COUNT", "12MB")
    with pytest.raises(ImproperlyConfigured, match="FLAG"):
        env_bool("FLAG", False)
    with pytest.raises(ImproperlyConfigured, match="COUNT"):
        env_int("COUNT", 1)


def test_env_int_enforces_a_minimum(monkeypatch):
    monkeypatch.setenv("COUNT", "0")
    with pytest.raises(ImproperlyConfigured, match="minimum"):
        env_int("COUNT", 5, minimum=1)


def test_env_list_splits_on_commas(monkeypatch):
    monkeypatch.setenv("HOSTS", " a.example, b.example ,")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DEBUG"}}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_production_settings_pass_the_deploy_check():
    done = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="0",
        SECRET_KEY=STRONG_KEY,
        ALLOWED_HOSTS="example.com",
    )
    assert done.returncode == 0, done.stderr
    assert "no issues" in done.stdout


def test_debug_off_without_a_secret_key_refuses_to_start():
    done = manage("check", DEBUG="0", SECRET_KEY="", ALLOWED_HOSTS="example.com")
    assert done.returncode != 0
    assert "SECRET_KEY must be set" in done.stderr


def test_a_bad_boolean_in_the_environment_stops_start_up():
    done = manage("check", DEBUG="sometimes")
    assert done.returncode != 0
    assert "DEBUG='sometimes' is not a boolean" in done.stderr


def settings_value(expression: str, **env: str) -> str:
    code = f"from django.conf import settings; print({expression})"
    done = manage("shell", "-c", code, **env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_nothing_configured_means_sqlite_under_var_and_eager_tasks(tmp_path):
    env = {"ARENA_VAR_DIR": str(tmp_path / "var"), "CELERY_BROKER_URL": ""}
    name = settings_value("settings.DATABASES['default']['NAME']", **env)
    assert name == str(tmp_path / "var" / "db.sqlite3")
    assert settings_value("settings.CELERY_TASK_ALWAYS_EAGER", **env) == "True"


def test_a_broker_and_a_database_url_switch_to_production_services():
    env = {
        "CELERY_BROKER_URL": "redis://redis:6379/0",
        "DATABASE_URL": "postgres://arena:secret@db:5432/arena",
    }
    assert settings_value("settings.CELERY_TASK_ALWAYS_EAGER", **env) == "False"
    engine = settings_value("settings.DATABASES['default']['ENGINE']", **env)
    assert engine == "django.db.backends.postgresql"


def test_static_files_are_served_by_whitenoise_with_debug_off(tmp_path):
    env = {
        "DEBUG": "0",
        "SECRET_KEY": STRONG_KEY,
        "ALLOWED_HOSTS": "testserver",
        "STATIC_ROOT": str(tmp_path / "static"),
    }
    assert manage("collectstatic", "--noinput", **env).returncode == 0
    fetch = (
        "from django.test import Client; from django.templatetags.static import static; "
        "r = Client().get(static('arena.css'), secure=True); "
        "print(type(r).__name__, r.status_code, r.headers['Cache-Control'])"
    )
    done = manage("shell", "-c", fetch, **env)
    assert done.returncode == 0, done.stderr
    served = done.stdout.strip().splitlines()[-1]
    assert served == "WhiteNoiseFileResponse 200 max-age=315360000, public, immutable"
