"""`arena run` with the real opencode CLI (`opencode run --format json`, the npm package
`make agents` installs) against the scripted model server's Chat Completions API: the run
folder, its outcome and opencode's JSON output, kept as its native log, are checked."""

import json
from pathlib import Path

from launcher_support import (
    assert_fix_and_check_session,
    assert_submittable_and_grades_ok,
    fix_and_check,
    installed_cli,
    launch_scripted,
)

from transcripts.model import Kind

MODEL = "qwen3-coder"  # a gpt-* model would get opencode's apply_patch instead of write


def launch(script, tmp_path: Path):
    return launch_scripted(
        script,
        tmp_path,
        keys=lambda url: {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-scripted"},
        harness="opencode",
        model=MODEL,
        cli=installed_cli("opencode", "ARENA_OPENCODE_CLI"),
    )


def write(path: Path, content: str) -> dict:
    return {"tool": "write", "input": {"filePath": str(path), "content": content}}


def shell(command: str) -> dict:
    return {"tool": "bash", "input": {"command": command, "description": "Run the check"}}


def fixes_its_solution(workspace: Path):
    return fix_and_check(
        workspace,
        read=lambda path: {"tool": "read", "input": {"filePath": str(path)}},
        write=write,
        shell=shell,
    )


def test_an_opencode_run_that_fixes_its_solution_leaves_a_run_folder_that_grades_ok(tmp_path):
    result, out, model = launch(fixes_its_solution, tmp_path)
    assert result.outcome == "ok", (result.detail, (out / "stderr.txt").read_text()[-2000:])
    assert result.session_complete and result.exit_code == 0
    assert result.cli_version == "1.18.33"
    assert result.turns == 6 and result.usage["input_tokens"] == 6 * 1200  # the server's count
    # the run's own config names the endpoint and lists the model, the key left in the variable
    config = json.loads((out / "home" / ".config" / "opencode" / "opencode.json").read_text())
    assert config["provider"]["arena"]["options"]["baseURL"] == f"{model.url}/v1"
    assert list(config["provider"]["arena"]["models"]) == [MODEL]
    assert "sk-scripted" not in json.dumps(config)
    main = [r for r in model.requests if r["body"].get("tools")]
    assert len(main) == 6 and all(r["path"] == "/v1/chat/completions" for r in main)
    assert main[0]["body"]["model"] == MODEL
    assert "row sum" in json.dumps(main[0]["body"]["messages"]).lower()
    # opencode's JSON output is its native log, named by its session id
    (log,) = result.native_logs
    assert log == f"{result.session_id}.jsonl"
    session = assert_fix_and_check_session(out, log, ["read", "write", "bash", "write", "bash"])
    assert session.id == result.session_id
    results = [e for e in session.events if e.kind == Kind.TOOL_RESULT]
    assert results[2].exit_code == 1
    assert_submittable_and_grades_ok(out, log)


def test_an_opencode_run_that_writes_no_solution_is_no_solution(tmp_path):
    result, out, _ = launch(lambda workspace: [[{"text": "I cannot do this."}]], tmp_path)
    assert result.outcome == "no_solution" and result.session_complete
    assert not (out / "solution.py").exists()
    assert result.native_logs == [f"{result.session_id}.jsonl"]
