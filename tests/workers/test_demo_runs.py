"""``manage.py demo_runs`` grades example uploads end to end on the CPU target."""

import pytest
from django.core.management import call_command

from submissions.models import Evaluation, Run

pytestmark = pytest.mark.django_db


def test_demo_runs_grade_an_honest_and_a_failing_solution_with_real_transcripts(
    django_capture_on_commit_callbacks, capsys
):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("demo_runs", "--problem", "softmax")
    runs = Run.objects.order_by("created_at")
    verdicts = [run.evaluations.get().verdict for run in runs]
    assert verdicts[0] == "ok"
    assert verdicts[1] not in ("ok", "infra_error")
    assert {run.status for run in runs} == {"evaluated"}
    # each carries the session of a real CLI whose scripted model wrote that very solution
    assert {run.language_model.slug for run in runs} == {"scripted-demo"}
    assert [run.harness.slug for run in runs] == ["claude-code", "codex-cli"]
    for run in runs:
        (stored,) = run.transcript_files.all()
        wrote_lazy = b"def forward(self, x, *rest)" in stored.file.read()
        assert wrote_lazy == (run.evaluations.get().verdict != "ok")
    assert {run.hardware.slug for run in runs} == {"cpu"}
    assert "softmax" in capsys.readouterr().out

    call_command("demo_runs", "--problem", "softmax")
    assert (Run.objects.count(), Evaluation.objects.count()) == (2, 2)
