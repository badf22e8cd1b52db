from collections import Counter
from pathlib import Path

from transcripts.model import Kind, Session, Usage
from transcripts.parsers import detect_format, parse_files, session_files_for

SAMPLES = Path(__file__).parent / "samples"
EDITS = SAMPLES / "claude-jsonl-edits-3fe1b6bc.jsonl"
STREAM = SAMPLES / "claude-stream-json-task-subagent.jsonl"
TASK_CALL = "toolu_01EMBD2Ez8pt8LWj5ovow1mU"


def kinds(session: Session) -> Counter:
    return Counter(event.kind for event in session.events)


def tool_names(session: Session) -> Counter:
    return Counter(e.tool_name for e in session.events if e.kind == Kind.TOOL_CALL)


def test_both_claude_samples_are_recognized_from_content():
    assert detect_format(EDITS) == "claude-jsonl"
    assert detect_format(STREAM) == "claude-stream-json"


def test_session_file_record_counts_match_the_sample():
    session = parse_files([EDITS])
    assert session.record_counts == {
        "user": 89,
        "assistant": 172,
        "file-history-snapshot": 10,
        "queue-operation": 4,
    }
    assert session.warnings == []


def test_session_file_envelope_fills_the_session():
    session = parse_files([EDITS])
    assert session.id == "3fe1b6bc-dbd0-4320-b980-4f147befa187"
    assert (session.harness, session.format) == ("claude-code", "claude-jsonl")
    assert session.cli_version == "2.0.76"
    assert session.cwd == "/Users/user/repo"
    assert session.models == ["claude-sonnet-4-5-20250929"]
    assert session.started_at < session.ended_at


def test_session_file_has_ten_prompts_and_counts_meta_messages_as_system():
    session = parse_files([EDITS])
    assert kinds(session)[Kind.USER] == 10
    injected = [e for e in session.events if e.subtype == "injected"]
    assert len(injected) == 3


def test_session_file_tool_calls_errors_and_thinking_match_the_sample():
    session = parse_files([EDITS])
    assert tool_names(session) == {
        "Bash": 38,
        "Edit": 18,
        "Read": 10,
        "Glob": 8,
        "Write": 1,
        "Skill": 1,
    }
    results = [e for e in session.events if e.kind == Kind.TOOL_RESULT]
    assert len(results) == 76
    assert sum(e.is_error for e in results) == 5
    thinking = [e for e in session.events if e.kind == Kind.REASONING]
    assert sum(1 for e in thinking if e.text) == 65


def test_failed_commands_carry_their_exit_code():
    session = parse_files([EDITS])
    codes = [e.exit_code for e in session.events if e.kind == Kind.TOOL_RESULT and e.is_error]
    assert sorted(code for code in codes if code is not None) == [1, 1, 1, 5]


def test_usage_counts_each_api_message_once_with_its_last_record():
    session = parse_files([EDITS])
    carriers = [e for e in session.events if e.usage is not None]
    assert len(carriers) == 67
    assert len({e.api_call_id for e in session.events if e.api_call_id}) == 67
    usage = session.usage()
    assert (usage.input, usage.output) == (15377, 34781)
    assert (usage.cache_write, usage.cache_read) == (1707033, 5157884)


def test_usage_sits_on_the_first_event_of_its_api_call():
    session = parse_files([EDITS])
    seen = set()
    for event in session.events:
        if event.api_call_id and event.api_call_id not in seen:
            seen.add(event.api_call_id)
            assert event.usage is not None
        elif event.api_call_id:
            assert event.usage is None


def test_every_edit_gets_a_unified_diff_from_its_structured_patch():
    session = parse_files([EDITS])
    edits = [e for e in session.events if e.tool_name == "Edit"]
    assert len(edits) == 18
    assert all(e.diff.startswith("--- a/") for e in edits)
    assert "\n@@ -299,14 +299,47 @@\n" in edits[0].diff


def test_a_created_file_shows_as_all_added_lines():
    session = parse_files([EDITS])
    write = next(e for e in session.events if e.tool_name == "Write")
    assert write.diff.startswith("--- /dev/null\n+++ b/_bmad-output/")
    body = write.diff.splitlines()[3:]
    assert body and all(line.startswith("+") for line in body)


def test_event_ids_are_unique_and_the_stored_form_round_trips():
    session = parse_files([EDITS])
    ids = [e.id for e in session.events]
    assert len(set(ids)) == len(ids)
    assert Session.from_dict(session.to_dict()) == session


def test_stream_json_splits_main_thread_and_subagent_lines():
    session = parse_files([STREAM])
    counts = session.record_counts
    assert counts["assistant"] + counts["user"] == 4
    (call,) = [e for e in session.events if e.children]
    assert call.call_id == TASK_CALL and call.tool_name == "Task"
    (agent,) = call.children
    assert sum(agent.record_counts.values()) == 71
    assert agent.agent_type == "Explore"


def test_stream_json_every_line_is_read_once_across_the_tree():
    session = parse_files([STREAM])
    counts = Counter()
    for _, part in session.walk():
        counts.update(part.record_counts)
    assert counts == {"system": 2, "assistant": 38, "user": 37, "result": 1}
    assert session.warnings == []


def test_stream_json_tool_calls_and_errors_across_the_tree():
    session = parse_files([STREAM])
    names, errors = Counter(), 0
    for _, part in session.walk():
        names += tool_names(part)
        errors += sum(e.is_error for e in part.events if e.kind == Kind.TOOL_RESULT)
    assert names == {"Read": 27, "Glob": 5, "Bash": 3, "Task": 1}
    assert errors == 2


def test_stream_json_result_line_gives_the_reported_totals():
    session = parse_files([STREAM])
    assert session.num_turns == 2
    assert session.duration_ms == 170911
    assert session.cost_usd == 0.0999967
    assert session.reported_usage.output == 4795
    assert session.cli_version == "2.1.6"
    assert session.models == ["claude-haiku-4-5-20251001"]
    assert session.events[-1].subtype == "result"


# Hand-written session folders in Claude Code's layouts (see samples/README.md). The v2.1.7 main
# file has 7 tool calls over 7 API messages, its subagents/agent-b7c41e2.jsonl 11 tool calls over
# 5 API messages and one hook_progress record; the Task result records totalDurationMs 349797 and
# totalTokens 57744 (the agent's last message: 5 + 2,311 + 54,987 + 441), while the agent file's
# timestamps span 89.4 s.
FOLDER = SAMPLES / "claude-subagents-folder-handwritten"
FOLDER_MAIN = FOLDER / "7c2e9a40-1d3b-4f5e-8a6c-2b4d6f8a0c1e.jsonl"
BESIDE = SAMPLES / "claude-agent-beside-handwritten"
BESIDE_MAIN = BESIDE / "3e8b51d2-6a47-4c09-b1f3-9d0e2c4a6b85.jsonl"


def test_subagents_folder_nests_the_agent_under_its_task_call():
    files = session_files_for(FOLDER_MAIN)
    assert [p.name for p in files] == [FOLDER_MAIN.name, "agent-b7c41e2.jsonl"]
    session = parse_files(files)
    (task,) = [e for e in session.events if e.children]
    assert (task.tool_name, task.call_id) == ("Task", "toolu_01fB0eKJkwreHBIgJLVHKtP3")
    (agent,) = task.children
    assert (agent.agent_id, agent.agent_type) == ("b7c41e2", "kernel-reviewer")
    assert sum(tool_names(session).values()) == 7
    assert sum(tool_names(agent).values()) == 11
    assert session.usage() == Usage(input=45, output=1677, cache_read=159770, cache_write=28702)
    assert agent.usage() == Usage(input=27, output=1475, cache_read=125267, cache_write=24055)
    assert session.warnings == []


def test_subagent_keeps_the_task_results_own_figures():
    session = parse_files(session_files_for(FOLDER_MAIN))
    (agent,) = next(e for e in session.events if e.children).children
    assert agent.duration_ms == 349797  # the Task result's, not the file's 89.4 s span
    figures = agent.cli_figures
    assert figures["Task result: toolUseResult.totalDurationMs"] == 349797
    assert figures["Task result: toolUseResult.totalTokens"] == 57744
    assert figures["Task result: toolUseResult.totalToolUseCount"] == 11


def test_hook_progress_in_a_subagent_file_is_a_hook_as_in_the_main_file():
    session = parse_files(session_files_for(FOLDER_MAIN))
    (agent,) = next(e for e in session.events if e.children).children
    assert kinds(agent)[Kind.RAW] == 0
    (hook,) = [e for e in agent.events if e.subtype == "hook"]
    assert hook.text == "PostToolUse · PostToolUse:Bash · python3 .claude/hooks/audit.py"
    assert agent.record_counts["progress"] == 1


def test_agent_files_beside_the_session_are_found_and_kept():
    """v2.0.64 writes agent-<id>.jsonl beside the session; these two are warm-up agents that no
    Task call spawned, so they hang at the top level with a warning."""
    files = session_files_for(BESIDE_MAIN)
    assert [p.name for p in files] == [
        BESIDE_MAIN.name,
        "agent-5f0a3c71.jsonl",
        "agent-9d24e6b8.jsonl",
    ]
    session = parse_files(files)
    assert session.record_counts == {"file-history-snapshot": 6, "user": 9, "assistant": 10}
    assert tool_names(session) == {"Write": 3, "Read": 1, "Edit": 1, "Bash": 1}
    holders = [e for e in session.events if e.subtype == "subagent"]
    assert [c.agent_id for e in holders for c in e.children] == ["5f0a3c71", "9d24e6b8"]
    assert [e.text for e in holders[0].children[0].events if e.kind == Kind.USER] == ["Warmup"]
    assert len(session.warnings) == 2
    edit = next(e for e in session.events if e.tool_name == "Edit")
    assert edit.diff is not None and "+# Prints a greeting for the name given" in edit.diff


def test_stream_json_keeps_the_result_lines_own_figures_verbatim():
    session = parse_files([STREAM])
    figures = session.cli_figures
    assert figures["result.usage"]["output_tokens"] == 161  # main thread only
    assert figures["result.modelUsage"]["claude-haiku-4-5-20251001"]["outputTokens"] == 4795
    assert figures["result.total_cost_usd"] == 0.0999967
    (agent,) = [p for depth, p in session.walk() if depth]
    assert agent.cli_figures["Task result: toolUseResult.totalTokens"] == 37089
