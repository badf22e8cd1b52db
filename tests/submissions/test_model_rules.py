import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import IntegrityError

from runners.schema import Verdict
from submissions.models import Evaluation, HardwareTarget, Run
from tests.factories import make_hardware, make_run

pytestmark = pytest.mark.django_db


def test_the_verdict_choices_are_the_engine_taxonomy_with_its_labels():
    # one table, in runners.schema: the model's choices are built from it
    assert Evaluation.Verdict.choices == [(v, Verdict.LABELS[v]) for v in Verdict.ALL]
    assert Evaluation.Verdict.INCORRECT_HIDDEN.label == "Incorrect on held-out shapes"


def test_a_cpu_target_cannot_be_ranked():
    with pytest.raises(IntegrityError, match="hardware_cpu_never_ranked"):
        make_hardware("cpu-2", device=HardwareTarget.Device.CPU, is_ranked=True)


def test_two_runs_cannot_share_a_content_key():
    run = make_run()
    with pytest.raises(IntegrityError):
        make_run(content_key=run.content_key)


def test_a_done_evaluation_must_carry_a_verdict():
    run = make_run()
    with pytest.raises(IntegrityError, match="evaluation_done_has_verdict"):
        Evaluation.objects.create(run=run, hardware=run.hardware, status="done", verdict="")


def test_runs_visible_to_a_visitor_are_the_published_ones():
    published, private = make_run(published=True), make_run(published=False)
    assert list(Run.objects.visible_to(AnonymousUser())) == [published]
    assert private not in Run.objects.visible_to(AnonymousUser())
