"""manage.py import_runs kernelbench-hard: a hand-written checkout in the peer's layout (one
problem, two published runs, a leaderboard naming an effort) imported as runs of ours, graded by
the real engine on the CPU, with the source's verdict and the link to its code on the run page
and in the API; a second import adds nothing."""

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from runners.kernelbench_hard.published import harness_of, model_slug, provider_of
from submissions.models import HardwareTarget, Run
from submissions.services.registry import engine_problems, seed_registry, sync_problems
from tests.runners.kbh_support import RELU, write_checkout, write_files

pytestmark = pytest.mark.django_db(transaction=True)

HONEST = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.clamp_min(0.0)
"""
RUNS = {  # run id -> (harness label, model id), as the source publishes them
    "20260101_000000_kimi-claude_kimi-k2.7-code_04_relu": ("kimi-claude", "kimi-k2.7-code"),
    "20260102_000000_or-opus_anthropic_claude-opus-5_04_relu": (
        "or-opus",
        "anthropic/claude-opus-5",
    ),
}


@pytest.fixture
def checkout(tmp_path) -> Path:
    root = tmp_path / "kb"
    write_files(write_checkout(root) / "04_relu", RELU)
    runs, details = (
        root / "public" / "runs" / "h100",
        root / "public" / "data" / "rundetail" / "h100",
    )
    runs.mkdir(parents=True)
    details.mkdir(parents=True)
    for n, (run_id, (harness, model)) in enumerate(RUNS.items()):
        (runs / f"{run_id}_solution.py.txt").write_text(HONEST.lstrip() + f"# version {n}\n")
        record = {
            "run_id": run_id,
            "problem": "04_relu",
            "harness": harness,
            "model": model,
            "correct": n == 0,
            "failure_reason": None if n == 0 else "check_failed",
            "peak_fraction": 0.245 if n == 0 else None,
            "stats": {"agent_s": 600 + n, "input_tokens": 1000, "output_tokens": 200},
        }
        (details / f"{run_id}.json").write_text(json.dumps(record))
    board = {
        "hardware": {"name": "NVIDIA H100 PCIe"},
        "models": [{"effort": "max", "results": {"04_relu": {"run_id": next(iter(RUNS))}}}],
    }
    results = root / "benchmarks" / "hard" / "results"
    results.mkdir(parents=True)
    (results / "leaderboard.h100.json").write_text(json.dumps(board))
    return root


@pytest.fixture
def platform(settings, tmp_path, monkeypatch) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    problems = tmp_path / "problems"
    problems.mkdir()
    monkeypatch.setenv("ARENA_EXTRA_PROBLEMS", str(problems))
    seed_registry()
    sync_problems(infos=engine_problems())
    return problems


def test_published_runs_become_graded_runs_with_the_source_beside_ours(checkout, platform, client):
    call_command(
        "import_runs",
        "kernelbench-hard",
        str(checkout),
        "--target",
        "cpu",
        "--problems",
        str(platform),
    )

    assert (platform / "kbh_relu" / "problem.yaml").is_file()
    runs = {run.metadata["source_run_id"]: run for run in Run.objects.all()}
    assert set(runs) == set(RUNS)
    kimi = runs["20260101_000000_kimi-claude_kimi-k2.7-code_04_relu"]
    assert (kimi.problem.slug, kimi.hardware.slug) == ("kbh_relu", "cpu")
    assert (kimi.language_model.slug, kimi.language_model.provider) == (
        "kimi-k2-7-code",
        "Moonshot AI",
    )
    assert (kimi.harness.slug, kimi.effort) == ("claude-code", "max")
    assert (kimi.input_tokens, kimi.output_tokens, kimi.wall_time_s) == (1000, 200, 600)
    assert kimi.submitter.username == "kernelbench-hard"
    assert kimi.source_result == {
        "source": "KernelBench-Hard",
        "run_id": "20260101_000000_kimi-claude_kimi-k2.7-code_04_relu",
        "gpu": "NVIDIA H100 PCIe",
        "correct": True,
        "failure_reason": "",
        "peak_fraction": 0.245,
    }
    assert kimi.source_url == (
        "https://github.com/Infatoshi/kernelbench.com/blob/HEAD/public/runs/h100/"
        "20260101_000000_kimi-claude_kimi-k2.7-code_04_relu_solution.py.txt"
    )
    # graded by our engine (the CPU queue runs in-process here)
    assert kimi.headline_evaluation.verdict == "ok", kimi.headline_evaluation.reason
    opus = runs["20260102_000000_or-opus_anthropic_claude-opus-5_04_relu"]
    assert (opus.language_model.slug, opus.harness.slug, opus.effort) == (
        "claude-opus-5",
        "claude-code",
        "",
    )

    page = client.get(kimi.get_absolute_url()).content.decode()
    assert (
        "Published by KernelBench-Hard: <b>correct</b>, 0.245 of peak on NVIDIA H100 PCIe" in page
    )
    assert f'<a href="{kimi.source_url}">its code</a>' in page
    # published once graded (ARENA_PUBLISH_ON_GRADE): their verdict stands beside our "ok"
    assert opus.published and opus.headline_evaluation.verdict == "ok"
    assert "<b>not correct (check_failed)</b>" in client.get(opus.get_absolute_url()).text
    problem = client.get("/problems/kbh_relu/?hardware=cpu").text
    assert "Where another benchmark judged otherwise" in problem
    assert f'<a href="{opus.get_absolute_url()}">' in problem  # theirs not correct, ours ok
    assert "KernelBench-Hard: not correct (check_failed)" in problem
    assert f'<a href="{kimi.get_absolute_url()}">' not in problem.split("Ranked runs")[0]
    data = client.get(f"/api/v1/runs/{kimi.uuid}/").json()
    assert data["source_url"] == kimi.source_url and data["source_result"]["correct"] is True

    call_command(
        "import_runs",
        "kernelbench-hard",
        str(checkout),
        "--target",
        "cpu",
        "--problems",
        str(platform),
    )
    assert Run.objects.count() == 2  # a second import adds only what is new


def test_a_published_run_the_intake_refuses_is_skipped_with_its_reason(
    checkout, platform, settings, capsys
):
    settings.ARENA_MAX_SOLUTION_BYTES = 100
    call_command(
        "import_runs",
        "kernelbench-hard",
        str(checkout),
        "--target",
        "cpu",
        "--problems",
        str(platform),
    )

    out, err = capsys.readouterr()
    assert "0 run(s) imported and queued on cpu, 0 already here, 2 skipped" in out
    assert f"skipped {next(iter(RUNS))}: not stored: The solution is" in err
    assert "the limit is 100." in err
    assert not Run.objects.exists()


def test_only_the_named_problems_runs_are_imported(checkout, platform, capsys):
    command = ["import_runs", "kernelbench-hard", str(checkout), "--problems", str(platform)]
    unknown = r"no published run of 09_conv \(the source's problems: 04_relu\)"
    with pytest.raises(CommandError, match=unknown):
        call_command(*command, "--target", "cpu", "--problem", "09_conv")
    assert not Run.objects.exists()

    call_command(*command, "--target", "cpu", "--problem", "kbh_relu")  # our slug
    assert "2 run(s) imported and queued on cpu" in capsys.readouterr().out


def test_the_named_runs_are_imported_and_queued_in_the_order_given(checkout, platform):
    command = ["import_runs", "kernelbench-hard", str(checkout), "--problems", str(platform)]
    first, second = RUNS
    with pytest.raises(CommandError, match=r"no published run 2099_nothing for h100"):
        call_command(*command, "--target", "cpu", "--run", second, "--run", "2099_nothing")
    assert not Run.objects.exists()

    call_command(*command, "--target", "cpu", "--run", second, "--run", first)
    order = Run.objects.order_by("pk").values_list("source_result__run_id", flat=True)
    assert list(order) == [second, first]


def test_bad_inputs_say_what_to_do(checkout, platform, tmp_path):
    with pytest.raises(CommandError, match="no hardware target 'b200'"):
        call_command("import_runs", "kernelbench-hard", str(checkout), "--target", "b200")
    with pytest.raises(CommandError, match="no such folder"):
        call_command("import_runs", "kernelbench-hard", str(tmp_path / "absent"), "--target", "cpu")
    with pytest.raises(CommandError, match="is not in ARENA_EXTRA_PROBLEMS"):
        call_command(
            "import_runs",
            "kernelbench-hard",
            str(checkout),
            "--target",
            "cpu",
            "--problems",
            str(tmp_path / "elsewhere"),
        )
    with pytest.raises(CommandError, match="no published run for b200"):
        call_command(
            "import_runs",
            "kernelbench-hard",
            str(checkout),
            "--gpu",
            "b200",
            "--target",
            "cpu",
            "--problems",
            str(platform),
        )
    assert not HardwareTarget.objects.filter(slug="b200").exists()
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("label", "harness"),
    [
        ("claude", "claude-code"),
        ("zai-claude", "claude-code"),
        ("or-fable", "claude-code"),
        ("hy3-claude", "opencode"),
        ("codex", "codex-cli"),
        ("grok", "grok-cli"),
        ("droid", "kbh-droid"),
    ],
)
def test_the_source_harness_labels_map_to_the_cli_that_ran(label, harness):
    assert harness_of(label) == harness


def test_model_ids_become_slugs_and_providers():
    assert model_slug("kinetic-0715[1m]") == "kinetic-0715-1m"
    assert model_slug("tencent/hy3-preview") == "hy3-preview"
    assert provider_of("glm-5.2") == "Z.ai" and provider_of("kinetic-0715") == ""
