import json
import subprocess

import pytest
from django.core.management import CommandError, call_command

from submissions.models import Problem
from submissions.services import registry
from tests.factories import make_hardware, make_problem

pytestmark = pytest.mark.django_db

DECK = [
    {
        "slug": "softmax",
        "title": "Row softmax (fp32)",
        "category": "triton-to-triton",
        "regime": "memory",
        "version": "a" * 64,
        "visible_count": 4,
        "hidden_count": 6,
        "cpu_capable": True,
    },
]


HARDWARE = [{"slug": "h100-sxm", "bandwidth_gbps": 3350.0, "peak_tflops": {"bf16": 989.4}}]


def fake_engine(monkeypatch, *, stdout: str, returncode: int = 0, stderr: str = ""):
    def run(command, **kwargs):
        assert command[1:] in (
            ["-m", "runners", "problems", "--json"],
            ["-m", "runners", "hardware", "--json"],
        )
        if command[3] == "hardware" and returncode == 0:
            return subprocess.CompletedProcess(command, 0, json.dumps(HARDWARE), "")
        return subprocess.CompletedProcess(command, returncode, stdout, stderr)

    monkeypatch.setattr(registry.subprocess, "run", run)


def test_sync_creates_updates_and_deactivates_problems(monkeypatch, capsys):
    make_problem("softmax", version="old", title="Old title")
    make_problem("retired")
    fake_engine(monkeypatch, stdout=json.dumps(DECK))

    call_command("sync_problems")

    softmax = Problem.objects.get(slug="softmax")
    assert (softmax.version, softmax.title, softmax.hidden_count) == ("a" * 64, DECK[0]["title"], 6)
    assert softmax.category == Problem.Category.TRITON_TO_TRITON
    assert not Problem.objects.get(slug="retired").is_active
    assert "deactivated: 1 retired" in capsys.readouterr().out


def test_sync_fails_loudly_when_the_engine_fails(monkeypatch):
    fake_engine(monkeypatch, stdout="", returncode=2, stderr="no module named yaml")
    with pytest.raises(CommandError, match="no module named yaml"):
        call_command("sync_problems")


@pytest.mark.parametrize("stdout", ["not json", '{"slug": "x"}', '[{"slug": "x"}]'])
def test_sync_refuses_output_that_is_not_the_documented_json(monkeypatch, stdout):
    make_problem("softmax")
    fake_engine(monkeypatch, stdout=stdout)
    with pytest.raises(CommandError, match="unexpected problem list"):
        call_command("sync_problems")
    assert Problem.objects.get().is_active


def test_sync_reads_the_real_engine_deck():
    call_command("sync_problems")

    slugs = set(Problem.objects.filter(is_active=True).values_list("slug", flat=True))
    assert {"softmax", "rmsnorm"} <= slugs
    assert all(len(p.version) == 64 for p in Problem.objects.all())


def test_sync_copies_roofs_to_known_targets_and_names_unknown_ones(monkeypatch, capsys):
    fake_engine(monkeypatch, stdout=json.dumps(DECK))
    known = make_hardware("h100-sxm", gpu_model="h100-sxm")
    make_hardware("mystery", gpu_model="tpu-v9")
    call_command("sync_problems")
    known.refresh_from_db()
    assert (known.bandwidth_gbps, known.peak_tflops) == (3350.0, {"bf16": 989.4})
    assert "mystery: not in the engine's table" in capsys.readouterr().err


def test_sync_keeps_the_statement_and_visible_shapes_agents_see():
    call_command("sync_problems")
    softmax = Problem.objects.get(slug="softmax")
    assert softmax.statement.startswith("#") and softmax.visible_shapes
    assert all(isinstance(shape, dict) for shape in softmax.visible_shapes)
