"""An upload graded end to end by the real engine on CPU, with tasks run eagerly in-process."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from submissions.models import Problem, Run
from submissions.services import evaluations, runs
from submissions.services.registry import engine_problems, ensure_cpu_target, sync_problems
from tests.factories import (
    make_harness,
    make_language_model,
    make_problem,
    make_token,
    make_user,
)
from tests.workers.conftest import make_graded_run

pytestmark = pytest.mark.django_db

FORBIDDEN = b"""import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
"""
TRANSCRIPT = b'{"type": "user", "message": {"content": "write a softmax kernel"}}\n'


def test_an_upload_is_graded_by_the_engine_and_its_history_is_served(
    django_capture_on_commit_callbacks, settings, tmp_path
):
    settings.ARENA_ENGINE_LOG_DIR = str(tmp_path / "grades")
    sync_problems(infos=engine_problems())
    api, form = _upload_form(FORBIDDEN)
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/v1/runs/", form, format="multipart")
    assert created.status_code == 201, created.content
    detail = api.get(created.json()["status_url"]).json()
    assert detail["status"] == "evaluated"
    [evaluation] = detail["evaluations"]
    assert (evaluation["status"], evaluation["verdict"]) == ("done", "forbidden")
    assert "torch.softmax" in evaluation["reason"]
    assert evaluation["engine_version"]
    assert {"name": "static", "status": "fail"}.items() <= evaluation["gates"][0].items()
    # the grade's staff log, one file per attempt, says each gate as it ends
    [log] = (tmp_path / "grades").iterdir()
    assert log.name == f"evaluation-{Run.objects.get().evaluations.get().pk}-attempt-1.log"
    assert "gate static: fail in" in log.read_text()


def test_an_upload_is_kept_when_queueing_its_grading_fails(
    monkeypatch, django_capture_on_commit_callbacks, caplog
):
    def broken(*, run):
        raise RuntimeError("broker unreachable")

    monkeypatch.setattr(runs, "enqueue_evaluation", broken)
    api, form = _upload_form(TRANSCRIPT)
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/v1/runs/", form, format="multipart")
    assert created.status_code == 201, created.content
    assert Run.objects.get().status == "received"
    assert "broker unreachable" in caplog.text


def test_an_upload_is_kept_when_queueing_its_transcript_parsing_fails(
    monkeypatch, django_capture_on_commit_callbacks, caplog
):
    def broken(name, **kwargs):
        raise RuntimeError("broker unreachable")

    monkeypatch.setattr(runs, "enqueue_evaluation", lambda **kw: None)
    monkeypatch.setattr("submissions.services.queue.enqueue", broken)
    api, form = _upload_form(TRANSCRIPT)
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/v1/runs/", form, format="multipart")
    assert created.status_code == 201, created.content
    assert Run.objects.get().transcript_status == Run.TranscriptStatus.PENDING  # swept later
    assert "broker unreachable" in caplog.text


def test_a_run_moves_from_received_through_queued_and_evaluating_to_evaluated(
    fake_engine, monkeypatch, django_capture_on_commit_callbacks
):
    run = make_graded_run()
    seen = [Run.objects.get(pk=run.pk).status]
    refresh = evaluations.refresh_run

    def recording(*, run_id):
        refresh(run_id=run_id)
        seen.append(Run.objects.get(pk=run_id).status)

    monkeypatch.setattr(evaluations, "refresh_run", recording)
    with django_capture_on_commit_callbacks(execute=True):
        evaluations.enqueue_evaluation(run=run)
    assert seen == ["received", "queued", "evaluating", "evaluated"]
    assert evaluations.enqueue_evaluation(run=run) is None


def _upload_form(solution: bytes) -> tuple[APIClient, dict]:
    if not Problem.objects.filter(slug="softmax").exists():
        make_problem("softmax")
    form = {
        "problem": "softmax",
        "model": make_language_model().slug,
        "harness": make_harness().slug,
        "hardware": ensure_cpu_target().slug,
        "solution": SimpleUploadedFile("solution.py", solution),
        "transcript": [SimpleUploadedFile("transcript.jsonl", TRANSCRIPT)],
    }
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(make_user())}")
    return api, form
