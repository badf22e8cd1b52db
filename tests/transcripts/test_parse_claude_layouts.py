import json
from pathlib import Path

import pytest

from transcripts.model import Kind, Session
from transcripts.parsers import TranscriptError, parse_files, session_files_for

FIXTURES = Path(__file__).parent / "fixtures" / "claude"
FOLDER_SESSION = FIXTURES / "subagents-folder" / "5d0c1a2e-7b3f-4c11-9a0e-1f2e3d4c5b6a.jsonl"
BESIDE_SESSION = FIXTURES / "agent-beside" / "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b.jsonl"
INLINE_SESSION = FIXTURES / "inline-sidechain" / "3c4d5e6f-7081-4293-a4b5-c6d7e8f90a1b.jsonl"
ODD = FIXTURES / "odd-records.jsonl"


def spawning_call(session: Session):
    (call,) = [e for e in session.events if e.children]
    return call


def test_session_files_for_finds_the_subagents_folder_and_meta_files():
    names = [p.name for p in session_files_for(FOLDER_SESSION)]
    assert names[0] == FOLDER_SESSION.name
    assert sorted(names[1:]) == [
        "agent-a11aa11.jsonl",
        "agent-a11aa11.meta.json",
        "agent-a22bb22.jsonl",
        "agent-a22bb22.meta.json",
    ]


def test_session_files_for_skips_agent_files_of_other_sessions():
    names = [p.name for p in session_files_for(BESIDE_SESSION)]
    assert names == [BESIDE_SESSION.name, "agent-b33cc33.jsonl"]


def test_subagents_folder_nests_two_levels_under_their_task_calls():
    session = parse_files(list(reversed(session_files_for(FOLDER_SESSION))))
    level_one = spawning_call(session)
    assert level_one.call_id == "toolu_01LayoutCTaskLevelOne"
    (agent,) = level_one.children
    assert (agent.agent_id, agent.agent_type, agent.description) == (
        "a11aa11",
        "general-purpose",
        "Survey kernels",
    )
    (grandchild,) = spawning_call(agent).children
    assert grandchild.agent_id == "a22bb22"
    assert [depth for depth, _ in session.walk()] == [0, 1, 2]
    assert grandchild.events[1].tool_name == "Glob"


def test_progress_mirrors_are_not_counted_twice():
    session = parse_files(session_files_for(FOLDER_SESSION))
    agent = spawning_call(session).children[0]
    assert agent.record_counts == {"user": 2, "assistant": 3}
    assert session.record_counts["progress"] == 2


def test_progress_mirrors_alone_still_nest_the_subagent():
    session = parse_files([FOLDER_SESSION])
    (agent,) = spawning_call(session).children
    assert agent.agent_id == "a11aa11"
    assert [e.kind for e in agent.events] == [Kind.USER, Kind.TOOL_CALL]


def test_agent_file_beside_the_session_is_linked_by_the_result_agent_id():
    session = parse_files(session_files_for(BESIDE_SESSION))
    (agent,) = spawning_call(session).children
    assert agent.agent_id == "b33cc33"
    assert agent.agent_type == "Explore"
    assert [e.tool_name for e in agent.events if e.kind == Kind.TOOL_CALL] == ["Read"]


def test_inline_sidechain_records_are_linked_by_their_prompt():
    session = parse_files([INLINE_SESSION])
    call = spawning_call(session)
    assert call.call_id == "toolu_01InlineTask"
    (agent,) = call.children
    assert agent.events[0].text == "Find the reference implementation of layer norm."
    assert session.title == "Locating layer norm reference"
    assert session.record_counts == {"summary": 1, "user": 2, "assistant": 2}


def test_an_agent_file_without_its_parent_call_is_kept_with_a_warning():
    agent_file = BESIDE_SESSION.parent / "agent-b33cc33.jsonl"
    session = parse_files([FIXTURES / "inline-sidechain" / INLINE_SESSION.name, agent_file])
    holders = [e for e in session.events if e.subtype == "subagent"]
    assert [child.agent_id for child in holders[0].children] == ["b33cc33"]
    assert any("b33cc33" in warning for warning in session.warnings)


def test_each_api_call_usage_is_counted_once_per_session_in_the_tree():
    session = parse_files(session_files_for(FOLDER_SESSION))
    outputs = [part.usage().output for _, part in session.walk()]
    assert outputs == [61 + 14, 40 + 25, 12 + 9]


def test_unknown_record_types_become_raw_events_kept_verbatim():
    session = parse_files([ODD])
    raws = [e.raw for e in session.events if e.kind == Kind.RAW and isinstance(e.raw, dict)]
    assert [raw["type"] for raw in raws] == ["attachment", "hologram"]
    assert raws[1]["payload"] == {"shape": "unknown to every parser"}
    assert session.record_counts["hologram"] == 1


def test_malformed_lines_are_kept_as_raw_text_with_a_warning():
    session = parse_files([ODD])
    broken = [e for e in session.events if e.kind == Kind.RAW and e.raw is None]
    assert broken[0].text.startswith('{"type":"assistant","uuid":"o-broken"')
    assert session.warnings == [
        "odd-records.jsonl:4: a JSON value that is not an object, kept as raw",
        "odd-records.jsonl:8: malformed JSON kept as raw text",
    ]


def test_withheld_thinking_is_marked_encrypted_with_empty_text():
    session = parse_files([ODD])
    reasoning = [e for e in session.events if e.kind == Kind.REASONING]
    assert [(e.text, e.encrypted) for e in reasoning] == [("", True), ("", True)]


def test_api_errors_and_compaction_become_system_notices():
    session = parse_files([ODD])
    notices = [(e.subtype, e.text[:25]) for e in session.events if e.kind == Kind.SYSTEM]
    assert notices == [
        ("api_error", "API Error: 529 Overloaded"),
        ("compaction", "Conversation compacted"),
        ("compaction_summary", "This session is being con"),
    ]


def test_a_failed_command_keeps_its_exit_code():
    session = parse_files([ODD])
    (result,) = [e for e in session.events if e.kind == Kind.TOOL_RESULT]
    assert (result.is_error, result.exit_code) == (True, 2)


def test_an_empty_file_is_refused_with_a_clear_message(tmp_path):
    empty = tmp_path / "session.jsonl"
    empty.write_text("")
    with pytest.raises(TranscriptError, match="empty"):
        parse_files([empty])


def test_a_file_in_no_known_format_is_refused(tmp_path):
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"hello": "world"}\nnot json at all\n')
    with pytest.raises(TranscriptError, match="no known transcript format"):
        parse_files([notes])


def test_no_files_at_all_is_refused():
    with pytest.raises(TranscriptError):
        parse_files([])


def test_stream_json_subagents_nest_by_parent_tool_use_id_to_any_depth():
    session = parse_files([FIXTURES / "stream-nested-two-results.jsonl"])
    outer = spawning_call(session)
    (agent,) = outer.children
    (inner,) = spawning_call(agent).children
    assert (agent.agent_id, agent.description) == ("a6", "Profile the kernel")
    assert (inner.agent_id, inner.agent_type) == ("b7", "Explore")
    assert inner.models == ["claude-haiku-4-5-20251001"]
    assert [e.tool_name for e in inner.events if e.kind == Kind.TOOL_CALL] == ["Bash"]


def test_stream_json_with_several_result_lines_sums_their_figures():
    session = parse_files([FIXTURES / "stream-nested-two-results.jsonl"])
    assert (session.num_turns, session.duration_ms) == (3, 34000)
    assert session.cost_usd == pytest.approx(0.26)
    assert session.reported_usage.output == 700 + 50 + 9
    assert [e.subtype for e in session.events if e.kind == Kind.SYSTEM] == [
        "init",
        "task_started",
        "task_notification",
        "result",
        "rate_limit",
        "result",
    ]


def test_older_builds_cost_is_taken_once_per_message(tmp_path):
    lines = [
        '{"type":"assistant","uuid":"u1","sessionId":"s","costUSD":0.01,'
        '"message":{"id":"m1","content":[{"type":"text","text":"a"}]}}',
        '{"type":"assistant","uuid":"u2","sessionId":"s","costUSD":0.03,'
        '"message":{"id":"m1","content":[{"type":"text","text":"b"}]}}',
        '{"type":"assistant","uuid":"u3","sessionId":"s","costUSD":0.5,'
        '"message":{"id":"m2","content":[{"type":"text","text":"c"}]}}',
    ]
    session_file = tmp_path / "s.jsonl"
    session_file.write_text("\n".join(lines) + "\n")
    assert parse_files([session_file]).cost_usd == pytest.approx(0.53)


def test_an_unreadable_path_is_refused_with_a_clear_message(tmp_path):
    with pytest.raises(TranscriptError, match="cannot read"):
        parse_files([tmp_path / "missing.jsonl"])
    with pytest.raises(TranscriptError, match="cannot read"):
        parse_files([tmp_path])


def test_an_agent_neither_named_nor_prompted_is_paired_with_a_call_in_order(tmp_path):
    main = tmp_path / BESIDE_SESSION.name
    main.write_text(BESIDE_SESSION.read_text().replace('"agentId":"b33cc33"', '"agentId":null'))
    agent = tmp_path / "agent-b33cc33.jsonl"
    prompt = "Read solution.py and say whether it uses shared memory."
    copied = (BESIDE_SESSION.parent / agent.name).read_text()
    agent.write_text(copied.replace(prompt, "A prompt rewritten by the CLI."))
    session = parse_files([agent, main])
    (child,) = spawning_call(session).children
    assert child.agent_id == "b33cc33"
    assert session.warnings == ["subagent b33cc33: linked to call toolu_bdrk_01BesideTask by order"]


def stream_result(cost: float, output: int, turns: int = 1) -> dict:
    usage = {"inputTokens": 3, "outputTokens": output, "cacheReadInputTokens": 10}
    model_usage = {"claude-sonnet-4-5-20250929": usage} if output else {}
    return {
        "type": "result",
        "subtype": "success",
        "parent_tool_use_id": None,
        "session_id": "s",
        "num_turns": turns,
        "duration_ms": 1000,
        "total_cost_usd": cost,
        "modelUsage": model_usage,
    }


def test_stream_json_results_restating_the_process_totals_count_once_per_process(tmp_path):
    init = {"type": "system", "subtype": "init", "session_id": "s", "claude_code_version": "2"}
    lines = [
        init,
        stream_result(0.10, 100),
        stream_result(0.15, 160),  # a follow-up turn: the same process, running totals
        init,
        stream_result(0.0, 0, turns=0),  # --resume after a crash: a new process starts at zero
        stream_result(0.05, 40),
    ]
    stream = tmp_path / "stream.jsonl"
    stream.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = parse_files([stream])
    assert session.cost_usd == pytest.approx(0.15 + 0.05)
    assert (session.reported_usage.output, session.reported_usage.input) == (160 + 40, 3 + 3)
    assert (session.num_turns, session.duration_ms) == (3, 4000)


def test_hook_progress_records_become_hook_notices_and_other_progress_is_only_counted(tmp_path):
    envelope = {"type": "progress", "sessionId": "s", "timestamp": "2026-01-01T00:00:01Z"}
    hook = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Edit"}
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"content": "go"}},
        {**envelope, "uuid": "p1", "data": {**hook, "command": "ruff format ."}},
        {**envelope, "uuid": "p2", "data": {"type": "bash_progress", "output": "partial"}},
    ]
    session_file = tmp_path / "s.jsonl"
    session_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = parse_files([session_file])
    notices = [(e.subtype, e.text) for e in session.events if e.kind == Kind.SYSTEM]
    assert notices == [("hook", "PostToolUse · PostToolUse:Edit · ruff format .")]
    assert session.record_counts == {"user": 1, "progress": 2}


def test_a_stop_hook_summary_lists_its_hooks_and_flags_their_errors(tmp_path):
    summary = {
        "type": "system",
        "subtype": "stop_hook_summary",
        "uuid": "h1",
        "sessionId": "s",
        "hookCount": 2,
        "hookInfos": [{"command": "make check"}, {"command": "ruff check ."}],
        "hookErrors": ["ruff check . exited with 1"],
        "preventedContinuation": False,
        "stopReason": "",
        "level": "suggestion",
    }
    session_file = tmp_path / "s.jsonl"
    session_file.write_text(json.dumps(summary) + "\n")
    (notice,) = parse_files([session_file]).events
    assert (notice.kind, notice.subtype, notice.is_error) == (Kind.SYSTEM, "hook", True)
    assert notice.text == "make check\nruff check .\nerror: ruff check . exited with 1"


def test_edits_without_a_structured_patch_are_drawn_from_their_arguments(tmp_path):
    def call(n: int, name: str, arguments: dict) -> dict:
        block = {"type": "tool_use", "id": f"t{n}", "name": name, "input": arguments}
        message = {"id": f"m{n}", "content": [block]}
        return {"type": "assistant", "uuid": f"u{n}", "sessionId": "s", "cwd": "/w", **{
            "message": message
        }}  # fmt: skip

    records = [
        call(1, "Edit", {"file_path": "/w/solution.py", "old_string": "a = 1\nb = 2",
                         "new_string": "a = 1\nb = 3"}),
        call(2, "MultiEdit", {"file_path": "/w/k.py", "edits": [
            {"old_string": "x", "new_string": "y"}, {"old_string": "p\nq", "new_string": "p"}]}),
        call(3, "Write", {"file_path": "/w/solution.py", "content": "one\ntwo\n"}),
    ]  # fmt: skip
    session_file = tmp_path / "s.jsonl"
    session_file.write_text("".join(json.dumps(record) + "\n" for record in records))
    edit, multi, write = (e for e in parse_files([session_file]).events if e.kind == Kind.TOOL_CALL)

    assert edit.diff.splitlines() == [
        "--- a/solution.py", "+++ b/solution.py",
        "@@ edit 1 (line numbers not recorded) @@", " a = 1", "-b = 2", "+b = 3",
    ]  # fmt: skip
    assert multi.diff.count("@@ edit") == 2 and "-x\n+y\n" in multi.diff and "-q\n" in multi.diff
    held = "what it held before is not recorded"
    assert write.diff.endswith(f"@@ whole file written ({held}) @@\n+one\n+two\n")
