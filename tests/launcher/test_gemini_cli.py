"""`arena run` with the real Gemini CLI (`gemini --prompt`, the npm package `make agents`
installs) against the scripted model server's Gemini API: the run folder, its outcome and Gemini
CLI's own chat log are checked."""

import json
from pathlib import Path

from launcher_support import (
    assert_fix_and_check_session,
    assert_submittable_and_grades_ok,
    fix_and_check,
    installed_cli,
    launch_scripted,
)


def launch(script, tmp_path: Path):
    return launch_scripted(
        script,
        tmp_path,
        keys=lambda url: {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "scripted"},
        harness="gemini-cli",
        model="gemini-2.5-pro",
        cli=installed_cli("gemini", "ARENA_GEMINI_CLI"),
    )


def write(path: Path, content: str) -> dict:
    return {"tool": "write_file", "input": {"file_path": str(path), "content": content}}


def shell(command: str) -> dict:
    return {"tool": "run_shell_command", "input": {"command": command}}


def fixes_its_solution(workspace: Path):
    return fix_and_check(
        workspace,
        read=lambda path: {"tool": "read_file", "input": {"file_path": str(path)}},
        write=write,
        shell=shell,
    )


def test_a_gemini_cli_run_that_fixes_its_solution_leaves_a_run_folder_that_grades_ok(tmp_path):
    result, out, model = launch(fixes_its_solution, tmp_path)
    assert result.outcome == "ok", (result.detail, (out / "stderr.txt").read_text()[-2000:])
    assert result.session_complete and result.exit_code == 0
    assert result.cli_version == "0.61.0"
    assert result.usage["input_tokens"] == 6 * 1200  # six model turns, as the server counted
    # the auth type is named in the run's own settings, with no telemetry or update checks
    settings = json.loads((out / "home" / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["telemetry"]["enabled"] is False
    main = [r for r in model.requests if r["body"].get("tools")]
    assert len(main) == 6 and all(":streamGenerateContent" in r["path"] for r in main)
    assert "row sum" in json.dumps(main[0]["body"]["contents"]).lower()
    # Gemini CLI's own chat log, named by the session id's first eight characters
    (log,) = result.native_logs
    assert log.startswith("session-") and log.endswith(f"-{result.session_id[:8]}.jsonl")
    tools = ["read_file", "write_file", "run_shell_command", "write_file", "run_shell_command"]
    session = assert_fix_and_check_session(out, log, tools)
    assert session.id == result.session_id
    assert_submittable_and_grades_ok(out, log)


def test_a_gemini_cli_run_that_writes_no_solution_is_no_solution(tmp_path):
    result, out, _ = launch(lambda workspace: [[{"text": "I cannot do this."}]], tmp_path)
    assert result.outcome == "no_solution" and result.session_complete
    assert not (out / "solution.py").exists()
    assert len(result.native_logs) == 1
