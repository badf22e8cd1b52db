"""`arena run` with the real Claude Code CLI (the npm package `make agents` installs) against a
scripted model server: each script plays an agent, and the run folder, its outcome and the CLI's
own session log are checked."""

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
from launcher_support import (
    HONEST,
    assert_fix_and_check_session,
    assert_submittable_and_grades_ok,
    fix_and_check,
    installed_cli,
    launch_scripted,
)

from arena_cli.launch import LaunchError, parse_budget, run_agent
from arena_cli.main import main as arena
from runners.pack import render_prompt
from runners.problem import load_problem


def claude() -> str:
    return installed_cli("claude", "ARENA_CLAUDE_CLI")


def launch(script, tmp_path: Path, **kwargs):
    return launch_scripted(
        script,
        tmp_path,
        keys=lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-scripted"},
        harness="claude-code",
        model="claude-sonnet-4-5",
        cli=claude(),
        **kwargs,
    )


def write(path: Path, content: str) -> dict:
    return {"tool": "Write", "input": {"file_path": str(path), "content": content}}


def bash(command: str) -> dict:
    return {"tool": "Bash", "input": {"command": command, "description": "check the solution"}}


def fixes_its_solution(workspace: Path):
    return fix_and_check(
        workspace,
        read=lambda path: {"tool": "Read", "input": {"file_path": str(path)}},
        write=write,
        shell=bash,
    )


def test_a_run_that_fixes_its_solution_leaves_a_run_folder_that_grades_ok(tmp_path):
    result, out, model = launch(fixes_its_solution, tmp_path)
    assert result.outcome == "ok", (result.detail, (out / "stderr.txt").read_text())
    assert not result.retryable and result.session_complete and result.exit_code == 0
    assert result.cli_version.startswith("2.") and "Claude Code" in result.cli_version
    prompt = (out / "workspace" / "PROMPT.md").read_bytes()
    assert result.prompt_hash == hashlib.sha256(prompt).hexdigest()
    # the platform's published statement hashes the same (submissions.services.integrity)
    statement = render_prompt(load_problem("row_sum"))
    assert result.prompt_hash == hashlib.sha256(statement.encode()).hexdigest()
    saved = json.loads((out / "result.json").read_text())
    assert saved["outcome"] == "ok" and saved["prompt_hash"] == result.prompt_hash
    assert saved["budget_s"] == 120.0 and saved["model"] == "claude-sonnet-4-5"
    # the CLI's own session log, where Claude Code writes it, in the run folder
    (log,) = result.native_logs
    assert log == f"{result.session_id}.jsonl" and (out / log).is_file()
    assert (out / "home" / ".claude" / "projects").is_dir()
    # our parser reads exactly the script's tool calls from it
    # and lineage rebuilds both versions the script wrote; the last is the run folder's solution
    assert_fix_and_check_session(out, log, ["Read", "Write", "Bash", "Write", "Bash"])
    # the model saw the prompt, and every main request offered the CLI's tools
    first = next(r for r in model.requests if r["body"].get("tools"))
    assert "row sum" in json.dumps(first["body"]["messages"][0]).lower()
    assert_submittable_and_grades_ok(out, log)


def test_a_run_past_its_budget_is_stopped_with_its_process_group(tmp_path):
    def sleeps(workspace: Path):
        return [[bash(f"echo $$ > {workspace}/shell.pid; sleep 300")]]

    started = time.monotonic()
    result, out, _ = launch(sleeps, tmp_path, budget_s=8.0)  # time to start and call Bash
    assert result.outcome == "timeout" and not result.retryable
    assert time.monotonic() - started < 60
    pid = int((out / "workspace" / "shell.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the agent's shell went with the CLI


def test_a_run_that_edits_the_reference_is_marked_template_mutated(tmp_path):
    def cheats(workspace: Path):
        return [
            [write(workspace / "solution.py", HONEST)],
            [bash(f"echo '# the reference, made easy' >> {workspace}/reference.py")],
            [{"text": "Done."}],
        ]

    result, _, _ = launch(cheats, tmp_path)
    assert result.outcome == "template_mutated" and result.mutated == ["reference.py"]


def test_a_run_that_writes_no_solution_is_no_solution(tmp_path):
    result, out, _ = launch(lambda workspace: [[{"text": "I cannot do this."}]], tmp_path)
    assert result.outcome == "no_solution" and result.session_complete
    assert not (out / "solution.py").exists()
    assert (
        arena(["submit", str(out), "--problem", "row_sum", "--model", "m", "--harness", "h"]) == 2
    )


def test_a_rate_limited_provider_is_a_retryable_outcome(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")  # passed through: the CLI gives up at once
    result, _, _ = launch(lambda workspace: [[{"status": 429}]], tmp_path, budget_s=60.0)
    assert result.outcome == "provider_rate_limited", (result.detail, result.exit_code)
    assert result.retryable


def test_bad_inputs_say_what_is_wrong(tmp_path):
    with pytest.raises(LaunchError, match="unknown harness 'claude'"):
        run_agent(harness="claude", model="m", problem="row_sum", out=tmp_path / "a", budget_s=1)
    with pytest.raises(LaunchError, match="no executable CLI"):
        run_agent(
            harness="claude-code",
            model="m",
            problem="row_sum",
            out=tmp_path / "b",
            budget_s=1,
            cli=str(tmp_path / "missing"),
        )
    with pytest.raises(LaunchError, match="unknown problem"):
        run_agent(
            harness="claude-code",
            model="m",
            problem="nope",
            out=tmp_path / "c",
            budget_s=1,
            cli=claude(),
        )
    assert (
        parse_budget("45m") == 2700 and parse_budget("1h30m") == 5400 and parse_budget("90") == 90
    )
    for bad in ("0", "soon", "5x"):
        with pytest.raises(ValueError, match="budget"):
            parse_budget(bad)
    assert (
        arena(
            [
                "run",
                "--harness",
                "claude-code",
                "--model",
                "m",
                "--problem",
                "row_sum",
                "--budget",
                "soon",
            ]
        )
        == 2
    )


def test_a_run_on_a_gpu_hands_its_check_that_gpus_lock(tmp_path):
    def reports(workspace: Path):
        seen = "echo $CUDA_VISIBLE_DEVICES $ARENA_GPU_LOCK $HOME $TRITON_CACHE_DIR"
        return [[bash(f"{seen} > {workspace}/seen.txt")], [{"text": "Done."}]]

    locks = tmp_path / "locks"
    result, out, _ = launch(reports, tmp_path, gpu="1", lock_dir=locks)
    assert result.outcome == "no_solution"
    gpu, lock, home, triton = (out / "workspace" / "seen.txt").read_text().split()
    assert (gpu, lock) == ("1", str(locks / "gpu-1.lock"))
    assert (home, triton) == (str(out / "home"), str(out / "cache" / "triton"))
