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
    assert all(run.transcript_files.count() == 1 for run in runs)
    assert {run.hardware.slug for run in runs} == {"cpu"}
    assert "softmax" in capsys.readouterr().out

    call_command("demo_runs", "--problem", "softmax")
    assert (Run.objects.count(), Evaluation.objects.count()) == (2, 2)
