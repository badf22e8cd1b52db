"""A processed transcript stores its run's lineage: versions in order, contents deduplicated with
the uploaded solutions, and the final-version check."""

import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from submissions.models import LineageVersion, Run, RunLineage, Solution
from submissions.services.registry import ensure_cpu_target, seed_registry
from submissions.services.transcripts import process_transcript
from tests.factories import make_problem, make_token, make_user

pytestmark = pytest.mark.django_db

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "softmax-run"
FAKE_ENGINE = Path(__file__).resolve().parents[1] / "workers" / "fake_engine.py"


@pytest.fixture(autouse=True)
def platform(settings, tmp_path, monkeypatch):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.ARENA_ENGINE_COMMAND = [sys.executable, str(FAKE_ENGINE)]
    monkeypatch.setenv("FAKE_ENGINE_LOG", str(tmp_path / "fake-engine.log"))
    seed_registry()
    ensure_cpu_target()
    make_problem("softmax")


def upload(solution: bytes, capture) -> Run:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(make_user('alice'))}")
    transcript = (EXAMPLE / "transcript.jsonl").read_bytes()
    form = {
        "problem": "softmax",
        "model": "claude-opus-4-5",
        "harness": "claude-code",
        "hardware": "cpu",
        "solution": SimpleUploadedFile("solution.py", solution),
        "transcript": [SimpleUploadedFile("transcript.jsonl", transcript)],
    }
    with capture(execute=True):
        response = api.post("/api/v1/runs/", form, format="multipart")
    assert response.status_code == 201, response.content
    return Run.objects.get(uuid=response.json()["id"])


def test_the_example_runs_versions_are_stored_and_its_final_one_is_the_upload(
    django_capture_on_commit_callbacks,
):
    run = upload((EXAMPLE / "solution.py").read_bytes(), django_capture_on_commit_callbacks)
    versions = list(run.lineage_versions.select_related("solution"))
    assert [(v.index, v.how, v.turn, v.output_tokens, v.wall_s) for v in versions] == [
        (0, "write", 1, 610, 20.0),
        (1, "edit", 3, 890, 75.0),
        (2, "write", 5, 2395, 160.0),
    ]
    assert versions[-1].solution_id == run.solution_id  # one stored file for both
    assert (
        versions[1].solution.code
        == (EXAMPLE.parents[1] / "runners/problems/softmax/starter.py").read_text()
    )
    assert (run.lineage.final_check, run.lineage.version_count) == ("match", 3)
    assert Solution.objects.count() == 3


def test_processing_the_transcript_again_stores_nothing_twice(django_capture_on_commit_callbacks):
    run = upload((EXAMPLE / "solution.py").read_bytes(), django_capture_on_commit_callbacks)
    process_transcript(run=run)
    assert LineageVersion.objects.filter(run=run).count() == 3
    assert RunLineage.objects.count() == 1 and Solution.objects.count() == 3


def test_an_upload_that_differs_from_the_last_version_is_flagged(
    django_capture_on_commit_callbacks,
):
    edited = (EXAMPLE / "solution.py").read_bytes() + b"# tuned by hand after the session\n"
    run = upload(edited, django_capture_on_commit_callbacks)
    assert run.lineage.mismatch
    assert run.lineage.final_check == RunLineage.Check.DIFFERS
    assert "differs from the uploaded solution.py" in run.lineage.message
