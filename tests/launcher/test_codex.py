"""`arena run` with the real Codex CLI (`codex exec --json`, the npm package `make agents`
installs) against the scripted model server's Responses API: the run folder, its outcome and
Codex's own rollout log are checked."""

import json
from pathlib import Path

from launcher_support import (
    BROKEN,
    CHECK,
    HONEST,
    assert_submittable_and_grades_ok,
    installed_cli,
    launch_scripted,
)

from transcripts.lineage import rebuild_lineage
from transcripts.model import Kind
from transcripts.parsers import parse_files


def launch(script, tmp_path: Path):
    return launch_scripted(
        script,
        tmp_path,
        keys=lambda url: {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-scripted"},
        harness="codex-cli",
        model="gpt-5.5",
        effort="high",
        cli=installed_cli("codex", "ARENA_CODEX_CLI"),
    )


def shell(command: str) -> list[dict]:
    """One turn: Codex's exec_command tool (one tool call per turn on the Responses API)."""
    return [{"tool": "exec_command", "input": {"cmd": command}}]


def writes(path: Path, content: str) -> list[dict]:
    return shell(f"cat > {path} <<'ARENA_EOF'\n{content}ARENA_EOF")


def fixes_its_solution(workspace: Path):
    return [
        shell("cat PROMPT.md"),
        writes(workspace / "solution.py", BROKEN),
        shell(CHECK),
        writes(workspace / "solution.py", HONEST),
        shell(CHECK),
        [{"text": "solution.py passes the check."}],
    ]


def test_a_codex_run_that_fixes_its_solution_leaves_a_run_folder_that_grades_ok(tmp_path):
    result, out, model = launch(fixes_its_solution, tmp_path)
    assert result.outcome == "ok", (result.detail, (out / "stderr.txt").read_text()[-2000:])
    assert result.session_complete and result.exit_code == 0
    assert result.cli_version == "codex-cli 0.171.0"
    assert result.usage["input_tokens"] == 6 * 1200  # six model turns, as the server counted
    # the provider came from OPENAI_BASE_URL, written into the run's own CODEX_HOME
    config = (out / "home" / ".codex" / "config.toml").read_text()
    assert f'base_url = "{model.url}/v1"' in config
    main = [r["body"] for r in model.requests if r["body"].get("tools")]
    assert len(main) == 6 and main[0]["reasoning"]["effort"] == "high"
    # Codex's own rollout log, found by the session's thread id
    (log,) = result.native_logs
    assert log.startswith("rollout-") and log.endswith(f"{result.session_id}.jsonl")
    session = parse_files([out / log])
    calls = [e for e in session.events if e.kind == Kind.TOOL_CALL]
    assert [e.tool_name for e in calls] == ["exec_command"] * 5
    assert json.dumps(calls[2].arguments).count("check.py") == 1
    # lineage rebuilds both versions from the shell's heredocs; the last is the folder's
    versions = rebuild_lineage(session).versions
    assert [(v.how, v.content) for v in versions] == [("shell", BROKEN), ("shell", HONEST)]
    assert (out / "solution.py").read_text() == HONEST
    assert_submittable_and_grades_ok(out, log)


def test_a_codex_run_that_writes_no_solution_is_no_solution(tmp_path):
    result, out, _ = launch(lambda workspace: [[{"text": "I cannot do this."}]], tmp_path)
    assert result.outcome == "no_solution" and result.session_complete
    assert not (out / "solution.py").exists()
