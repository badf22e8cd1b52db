"""Every page sends a Content-Security-Policy; the transcript viewer keeps its own; the
production settings pass Django's deployment checks."""

import os
import re
import secrets
import subprocess
import sys

import pytest
from django.conf import settings
from django.urls import reverse

from tests.factories import make_registry, make_run, make_superuser
from tests.submissions.test_transcript_pages import parsed_run
from transcripts.render import content_security_policy

PAGES = [
    "/",
    "/boards/h100-sxm/",
    "/boards/h100-sxm/matrix/",
    "/boards/h100-sxm/charts/",
    "/problems/",
    "/problems/softmax/",
    "/models/",
    "/models/claude-sonnet-4-5/",
    "/harnesses/",
    "/harnesses/claude-code/",
    "/runs/",
    "/api/v1/",
    "/api/v1/runs/",
    "/api/v1/docs/",
    "/api/v1/schema/",
    "/admin/login/",
    "/no-such-page/",
]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES)
def test_every_page_sends_the_policy(client, path):
    make_registry()
    response = client.get(path)
    assert response.status_code in (200, 404), path
    assert response["Content-Security-Policy"] == settings.ARENA_CSP


@pytest.mark.django_db
def test_the_run_page_and_the_admin_send_the_policy_and_no_inline_script(client):
    run = make_run(hardware=make_registry()["hardware"])
    client.force_login(make_superuser())
    for path in (run.get_absolute_url(), "/admin/", "/admin/submissions/run/", "/api/v1/docs/"):
        response = client.get(path)
        assert response["Content-Security-Policy"] == settings.ARENA_CSP, path
        assert INLINE_SCRIPT.findall(response.content.decode()) == [], path


def test_the_policy_allows_scripts_only_from_the_site():
    directives = dict(d.strip().split(" ", 1) for d in settings.ARENA_CSP.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"


@pytest.mark.django_db
def test_the_transcript_viewer_keeps_its_own_policy(client, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    run = parsed_run(hardware=make_registry()["hardware"])
    own = content_security_policy() + "; frame-ancestors 'none'"
    for name in ("submissions:run-transcript", "submissions:run-transcript-download"):
        response = client.get(reverse(name, kwargs={"run_id": run.uuid}))
        assert response.status_code == 200
        assert response["Content-Security-Policy"] == own


def test_production_settings_pass_the_deployment_checks(tmp_path):
    env = os.environ | {
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "arena.example",
        "ARENA_VAR_DIR": str(tmp_path / "var"),
        "STATIC_ROOT": str(tmp_path / "static"),
    }
    env.pop("DATABASE_URL", None)
    checked = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no issues" in checked.stdout
