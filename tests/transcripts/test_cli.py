import json
import subprocess
import sys
from pathlib import Path

from transcripts.cli import main

SAMPLES = Path(__file__).parent / "samples"
STREAM = SAMPLES / "claude-stream-json-task-subagent.jsonl"
ROOT = Path(__file__).resolve().parents[2]


def record(**fields) -> str:
    base = {"sessionId": "sid1", "timestamp": "2026-01-01T00:00:00Z"}
    return json.dumps(base | fields)


def write_session_folder(folder: Path) -> Path:
    """A Claude Code session whose Task call ran a subagent stored in <sid>/subagents/."""
    task = {"type": "tool_use", "id": "toolu_T", "name": "Task", "input": {"prompt": "look"}}
    main_lines = [
        record(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "go"}),
        record(
            type="assistant",
            uuid="u2",
            parentUuid="u1",
            message={"id": "m1", "role": "assistant", "content": [task], "usage": {}},
        ),
        record(
            type="user",
            uuid="u3",
            parentUuid="u2",
            message={
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_T"}],
            },
            toolUseResult={"status": "completed", "agentId": "a1"},
        ),
    ]
    text = {"type": "text", "text": "SUBAGENT-MARKER"}
    agent_lines = [
        record(type="user", uuid="s1", parentUuid=None, isSidechain=True, agentId="a1",
               message={"role": "user", "content": "look"}),
        record(type="assistant", uuid="s2", parentUuid="s1", isSidechain=True, agentId="a1",
               message={"id": "m2", "role": "assistant", "content": [text], "usage": {}}),
    ]  # fmt: skip
    (folder / "sid1" / "subagents").mkdir(parents=True)
    (folder / "sid1" / "subagents" / "agent-a1.jsonl").write_text("\n".join(agent_lines) + "\n")
    session_file = folder / "sid1.jsonl"
    session_file.write_text("\n".join(main_lines) + "\n")
    return session_file


def test_render_writes_one_page_with_the_given_title(tmp_path):
    out = tmp_path / "run.html"
    assert main(["render", str(STREAM), "-o", str(out), "--title", "Run 7 & co"]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<title>Run 7 &amp; co</title>" in page
    assert "toolu_01EMBD2Ez8pt8LWj5ovow1mU" in page


def test_render_picks_up_the_subagents_folder_beside_a_session_file(tmp_path):
    out = tmp_path / "run.html"
    assert main(["render", str(write_session_folder(tmp_path)), "-o", str(out)]) == 0
    assert "SUBAGENT-MARKER" in out.read_text(encoding="utf-8")


def test_render_shows_solution_and_evaluation_files(tmp_path):
    solution, evaluation = tmp_path / "solution.py", tmp_path / "result.json"
    solution.write_text("import torch\n")
    evaluation.write_text(json.dumps({"verdict": "ok", "gates": [{"name": "static"}]}))
    out = tmp_path / "run.html"
    args = ["render", str(STREAM), "-o", str(out), "--solution", str(solution)]
    assert main([*args, "--evaluation", str(evaluation), "--verdict", "ok", "--score", "0.4"]) == 0
    page = out.read_text(encoding="utf-8")
    assert 'id="solution"' in page and '<table class="gates">' in page and ">0.4<" in page


def test_missing_file_is_a_clear_error_with_exit_status_2(tmp_path, capsys):
    assert main(["render", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "x.html")]) == 2
    assert "nope.jsonl: no such file" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_unknown_format_is_a_clear_error_with_exit_status_2(tmp_path, capsys):
    junk = tmp_path / "notes.txt"
    junk.write_text("just some notes\n")
    assert main(["render", str(junk), "-o", str(tmp_path / "x.html")]) == 2
    assert "no known transcript format" in capsys.readouterr().err


def test_evaluation_that_is_not_json_is_refused(tmp_path, capsys):
    bad = tmp_path / "result.json"
    bad.write_text("{oops")
    args = ["render", str(STREAM), "-o", str(tmp_path / "x.html"), "--evaluation", str(bad)]
    assert main(args) == 2
    assert "result.json: not JSON" in capsys.readouterr().err


def test_module_entry_point_runs_the_command(tmp_path):
    out = tmp_path / "run.html"
    done = subprocess.run(
        [sys.executable, "-m", "transcripts", "render", str(STREAM), "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 10_000


def test_render_redacts_secrets_as_the_platform_does(tmp_path):
    """Issue 13: a key planted in a real sample stayed in the locally rendered page."""
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    planted = tmp_path / STREAM.name
    planted.write_text(STREAM.read_text(encoding="utf-8").replace("Find all Python", key, 1))
    assert key in planted.read_text(encoding="utf-8")
    out = tmp_path / "run.html"
    assert main(["render", str(planted), "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert key not in page and "[REDACTED:openai-key]" in page
