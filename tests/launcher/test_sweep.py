"""`arena sweep` over a 2 x 2 x 2 matrix (two models, two problems, two repeats) with the real
Claude Code CLI and one scripted model server for every run: stopped by a signal midway, it
takes its running CLIs down and a second call finishes only what is missing."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from launcher_support import HONEST, installed_cli, provider_env
from model_server import ScriptedModel

from arena_cli.main import main as arena
from arena_cli.sweep import MatrixError, read_manifest, read_matrix

MATRIX = """
agents:
  - {harness: claude-code, models: [model-a, model-b]}
problems: [row_sum, softmax]
repeats: 2
budget: 60s
concurrency: 2
"""


def works_a_while(workspace: Path):
    return [
        [{"tool": "Write", "input": {"file_path": f"{workspace}/solution.py", "content": HONEST}}],
        [
            {
                "tool": "Bash",
                "input": {
                    "command": f"echo $$ > {workspace}/shell.pid; sleep 3",
                    "description": "x",
                },
            }
        ],
        [{"text": "Done."}],
    ]


def test_a_sweep_stopped_midway_resumes_without_running_finished_runs_again(tmp_path, capsys):
    claude = installed_cli("claude", "ARENA_CLAUDE_CLI")
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    out = tmp_path / "sweep"
    command = [sys.executable, "-m", "arena_cli.main", "sweep", str(tmp_path / "matrix.yaml")]
    command += ["--out", str(out), "--cli", f"claude-code={claude}"]
    with ScriptedModel(works_a_while) as model:
        keys = {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-scripted"}
        env = os.environ | keys
        sweep = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while len(read_manifest(out)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        sweep.send_signal(signal.SIGTERM)
        assert sweep.wait(timeout=60) == 130
        first = read_manifest(out)
        assert 2 <= len(first) < 8
        # the runs in flight were stopped with their shells
        finished = {line["folder"] for line in first.values()}
        for folder in out.iterdir():
            pid = folder / "workspace" / "shell.pid"
            if folder.name not in finished and pid.is_file():
                assert not Path(f"/proc/{int(pid.read_text())}").exists(), folder.name
        with provider_env(**keys):
            code = arena(
                [
                    "sweep",
                    str(tmp_path / "matrix.yaml"),
                    "--out",
                    str(out),
                    "--cli",
                    f"claude-code={claude}",
                ]
            )
    printed = capsys.readouterr().out
    assert code == 0
    assert f"8 run(s), {len(first)} finished before, {8 - len(first)} to run" in printed
    lines = (out / "manifest.jsonl").read_text().splitlines()
    assert len(lines) == 8  # no finished run ran twice
    final = read_manifest(out)
    assert {line["outcome"] for line in final.values()} == {"ok"}
    assert all((out / line["folder"] / "solution.py").is_file() for line in final.values())
    rows = [line.split() for line in printed.splitlines() if line.startswith("claude-code")]
    assert rows == [["claude-code", "model-a", "-", "4"], ["claude-code", "model-b", "-", "4"]]
    assert json.loads(lines[0])["outcome"] == "ok"


def test_a_bad_matrix_says_what_is_wrong(tmp_path):
    path = tmp_path / "m.yaml"
    cases = {
        "agents: []\nproblems: [row_sum]": "agents must list",
        "agents: [{harness: nope, models: [m]}]\nproblems: [row_sum]": "unknown harness 'nope'",
        "agents: [{harness: codex-cli}]\nproblems: [row_sum]": "models must be a list",
        "agents: [{harness: codex-cli, models: [m]}]\nproblems: row_sum": "problems must be a list",
        "agents: [{harness: codex-cli, models: [m]}]\nproblems: [p]\nrepeats: 0": "repeats must be",
        "agents: [{harness: codex-cli, models: [m]}]\nproblems: [p]\nbudget: soon": "budget 'soon'",
        "[1, 2": "m.yaml",
    }
    for text, message in cases.items():
        path.write_text(text)
        try:
            read_matrix(path)
        except MatrixError as error:
            assert message in str(error), (text, error)
        else:
            raise AssertionError(f"accepted: {text}")
    assert arena(["sweep", str(path), "--out", str(tmp_path / "s")]) == 2
    path.write_text(MATRIX)
    assert arena(["sweep", str(path), "--out", str(tmp_path / "s"), "--cli", "claude"]) == 2
    assert not (tmp_path / "s").exists()  # nothing started


def test_retry_infra_runs_again_only_what_the_provider_failed(tmp_path, capsys):
    """A 429 is kept in the manifest as a retryable outcome: a plain resume leaves it, and
    `--retry-infra` runs it again (its first folder moved aside)."""
    (tmp_path / "matrix.yaml").write_text(
        "agents: [{harness: claude-code, models: [model-a]}]\nproblems: [row_sum]\nbudget: 60s\n"
    )
    out = tmp_path / "sweep"
    command = ["sweep", str(tmp_path / "matrix.yaml"), "--out", str(out)]
    command += ["--cli", f"claude-code={installed_cli('claude', 'ARENA_CLAUDE_CLI')}"]

    def sweep(script, *extra: str) -> dict:
        with ScriptedModel(script) as model:
            keys = {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-scripted"}
            with provider_env(**keys, CLAUDE_CODE_MAX_RETRIES="0"):
                assert arena([*command, *extra]) == 0
        return read_manifest(out)

    (limited,) = sweep(lambda workspace: [[{"status": 429}]]).values()
    assert (limited["outcome"], limited["retryable"]) == ("provider_rate_limited", True)
    sweep(works_a_while)  # without --retry-infra: nothing to run
    assert "1 run(s), 1 finished before, 0 to run" in capsys.readouterr().out
    (retried,) = sweep(works_a_while, "--retry-infra").values()
    assert retried["outcome"] == "ok" and (out / retried["folder"] / "solution.py").is_file()
    assert len((out / "manifest.jsonl").read_text().splitlines()) == 2
    assert [p.name for p in out.iterdir() if ".earlier-" in p.name] == [
        f"{retried['folder']}.earlier-1"
    ]
