import json
from pathlib import Path

from transcripts.model import Kind, Usage
from transcripts.parsers import detect_format, parse_files

SAMPLES = Path(__file__).parent / "samples"
ROLLOUTS = Path(__file__).parent / "fixtures" / "codex"
MAIN = ROLLOUTS / "rollout-2026-03-04T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"
CHILD = ROLLOUTS / "rollout-2026-03-04T10-00-06-0199aaaa-0000-7000-8000-000000000002.jsonl"


def only(events, kind):
    return [e for e in events if e.kind == kind]


def test_exec_json_command_sample_pairs_call_and_exit_code():
    session = parse_files([SAMPLES / "codex-exec-json-command.jsonl"])
    assert (session.harness, session.format) == ("codex", "codex-exec-json")
    assert session.id == "019a2d7b-231d-7290-acc1-6bc6571440da"
    (call,) = only(session.events, Kind.TOOL_CALL)
    (result,) = only(session.events, Kind.TOOL_RESULT)
    assert call.arguments == {"command": "bash -lc 'cat test.js'"}
    assert result.call_id == call.call_id == "item_1"
    assert (result.exit_code, result.is_error) == (0, False)
    assert result.text == "console.log('Hello World');\n"
    assert len(only(session.events, Kind.REASONING)) == 2
    assert len(only(session.events, Kind.ASSISTANT)) == 1


def test_exec_json_turn_usage_splits_cached_input_out():
    command = parse_files([SAMPLES / "codex-exec-json-command.jsonl"])
    change = parse_files([SAMPLES / "codex-exec-json-file-change.jsonl"])
    assert command.usage() == Usage(input=6087 - 5120, output=204, cache_read=5120)
    assert change.usage() == Usage(input=6008 - 4096, output=51, cache_read=4096)
    assert command.events[0].usage is not None and command.events[0].api_call_id == "turn-1"


def test_exec_json_file_change_keeps_path_and_kind_without_a_diff():
    session = parse_files([SAMPLES / "codex-exec-json-file-change.jsonl"])
    (call,) = only(session.events, Kind.TOOL_CALL)
    assert call.tool_name == "file_change"
    assert call.file_path == "/private/tmp/codex-research-test/hello.txt"
    assert call.arguments["changes"] == [
        {"path": "/private/tmp/codex-research-test/hello.txt", "kind": "add"}
    ]
    assert call.diff is None
    assert session.record_counts == {
        "thread.started": 1,
        "turn.started": 1,
        "item.completed": 3,
        "turn.completed": 1,
    }


def test_rollout_files_are_recognized():
    assert detect_format(MAIN) == "codex-rollout"
    assert detect_format(SAMPLES / "codex-exec-json-command.jsonl") == "codex-exec-json"


def test_rollout_meta_and_turn_context_fill_the_session():
    session = parse_files([MAIN])
    assert session.id == "0199aaaa-0000-7000-8000-000000000001"
    assert (session.cwd, session.cli_version, session.models) == (
        "/home/dev/kernels",
        "0.125.0",
        ["gpt-5.5"],
    )


def test_rollout_usage_takes_each_distinct_last_token_usage_once():
    session = parse_files([MAIN])
    assert session.usage() == Usage(input=9000, output=580, cache_read=16500, reasoning=240)
    assert session.reported_usage == session.usage()
    assert len([e for e in session.events if e.usage is not None]) == 4


def test_rollout_reasoning_is_encrypted_with_the_readable_summary_kept():
    session = parse_files([MAIN])
    reasoning = only(session.events, Kind.REASONING)
    assert [(e.text, e.encrypted) for e in reasoning] == [
        ("**Reading the reference first**", True),
        ("**Writing the kernel**", True),
    ]


def test_rollout_calls_pair_with_outputs_and_exec_end_details():
    session = parse_files([MAIN])
    results = {e.call_id: e for e in only(session.events, Kind.TOOL_RESULT)}
    assert (results["call_read1"].exit_code, results["call_read1"].duration_ms) == (0, 412)
    assert (results["call_run1"].exit_code, results["call_run1"].is_error) == (1, True)
    assert results["call_patch1"].text.startswith("Success. Updated")
    assert results["call_patch1"].duration_ms == 300


def test_rollout_patch_diff_comes_from_patch_apply_end():
    session = parse_files([MAIN])
    (patch,) = [e for e in session.events if e.tool_name == "apply_patch"]
    assert patch.file_path == "solution.py"
    assert patch.diff.splitlines()[:3] == ["--- /dev/null", "+++ b/solution.py", "@@ -0,0 +1,4 @@"]


def test_rollout_compaction_and_unknown_records_are_kept():
    session = parse_files([MAIN])
    assert [e.subtype for e in only(session.events, Kind.SYSTEM) if e.subtype == "compaction"] == [
        "compaction",
        "compaction",
    ]
    (raw,) = only(session.events, Kind.RAW)
    assert raw.raw["type"] == "world_state"


def test_spawned_agent_rollout_nests_under_its_spawn_call_without_parent_history():
    session = parse_files([CHILD, MAIN])
    (call,) = [e for e in session.events if e.children]
    assert call.tool_name == "spawn_agent"
    (child,) = call.children
    assert child.agent_id == "0199aaaa-0000-7000-8000-000000000002"
    assert child.agent_type == "explorer"
    assert child.description == "Find how triton is installed here"
    assert child.models == ["gpt-5.5-mini"]
    assert [e.kind for e in child.events] == [
        Kind.USER,
        Kind.TOOL_CALL,
        Kind.TOOL_RESULT,
        Kind.ASSISTANT,
    ]
    assert child.usage() == Usage(input=3100, output=52, cache_read=3000)


def test_exec_json_given_with_its_rollout_defers_to_the_rollout():
    session = parse_files([SAMPLES / "codex-exec-json-command.jsonl", MAIN])
    assert session.format == "codex-rollout"
    assert any("codex-exec-json-command.jsonl" in warning for warning in session.warnings)


def test_apply_patch_input_gives_a_diff_when_no_patch_end_event_exists(tmp_path):
    patch = (
        "*** Begin Patch\n*** Update File: solution.py\n@@ def forward(x):\n"
        "-    return x\n+    return x * 2\n*** Add File: notes.md\n+fused\n*** End Patch\n"
    )
    rollout = tmp_path / "rollout-2026-03-05T08-00-00-0199bbbb.jsonl"
    rollout.write_text(
        '{"timestamp":"2026-03-05T08:00:00Z","type":"session_meta","payload":{"id":"0199bbbb"}}\n'
        '{"timestamp":"2026-03-05T08:00:01Z","type":"response_item","payload":{"type":'
        f'"custom_tool_call","status":"completed","call_id":"c1","name":"apply_patch","input":'
        f"{json.dumps(patch)}}}}}\n"
    )
    (call,) = parse_files([rollout]).events
    assert call.file_path == "solution.py"
    assert call.diff.splitlines() == [
        "--- a/solution.py",
        "+++ b/solution.py",
        "@@ def forward(x):",
        "-    return x",
        "+    return x * 2",
        "--- /dev/null",
        "+++ b/notes.md",
        "@@ -0,0 +1,1 @@",
        "+fused",
    ]


def test_early_rollouts_without_the_envelope_are_read(tmp_path):
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"
    records = [
        {"id": "0191aaaa", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        {
            "type": "function_call",
            "name": "shell",
            "arguments": json.dumps({"command": ["apply_patch", patch]}),
            "call_id": "call_1",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Done!"},
    ]
    rollout = tmp_path / "rollout-2025-05-01T10-00-00-0191aaaa.jsonl"
    rollout.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert detect_format(rollout) == "codex-rollout"
    session = parse_files([rollout])
    assert session.id == "0191aaaa"
    assert [e.kind for e in session.events] == [Kind.USER, Kind.TOOL_CALL, Kind.TOOL_RESULT]
    assert session.events[1].file_path == "hello.txt"
    assert "+hi" in session.events[1].diff


CHILD_ID = "019a0000-1000-7000-8000-000000000002"  # UUIDv7: minted at 0x019a00001000 ms
PARENT_ID = "019a0000-0100-7000-8000-00000000000a"


def rollout_line(kind: str, payload: dict) -> str:
    return json.dumps({"timestamp": "2026-03-06T09:00:00Z", "type": kind, "payload": payload})


def turn(turn_id: str, model: str) -> str:
    return rollout_line("turn_context", {"turn_id": turn_id, "model": model})


def call(call_id: str) -> str:
    item = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": call_id}
    return rollout_line("response_item", item)


def tokens(output: int) -> str:
    usage = {"input_tokens": 500, "cached_input_tokens": 100, "output_tokens": output}
    info = {"total_token_usage": usage, "last_token_usage": usage}
    return rollout_line("event_msg", {"type": "token_count", "info": info})


def test_replayed_parent_turns_with_their_own_turn_context_are_skipped(tmp_path):
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": PARENT_ID, "depth": 1}}}
    lines = [
        rollout_line("session_meta", {"id": CHILD_ID, "source": spawn}),
        rollout_line("session_meta", {"id": PARENT_ID}),
        turn("019a0000-0200-7000-8000-0000000000a1", "gpt-parent"),  # minted before the child
        call("p1"),
        tokens(20),
        turn("019a0000-1001-7000-8000-0000000000b1", "gpt-child"),
        call("c1"),
        tokens(7),
    ]
    rollout = tmp_path / f"rollout-2026-03-06T09-00-00-{CHILD_ID}.jsonl"
    rollout.write_text("\n".join(lines) + "\n")
    session = parse_files([rollout])
    assert [e.call_id for e in session.events] == ["c1"]
    assert session.models == ["gpt-child"]
    assert session.usage() == Usage(input=400, output=7, cache_read=100)


# A hand-written rollout in codex-tui 0.125.0's record structure (see samples/README.md): 32 API
# calls, each closed by a token_count event, whose last total_token_usage is input 6,055,836
# (cached 4,929,536), output 9,118 (reasoning 1,759), total 6,064,954. Three processes fail: exit 2
# and a later exit 1 in their own exec_command output, and between them exit 1 in the write_stdin
# output that saw a long test run end; six outputs only say the process is still running.
ROLLOUT = SAMPLES / "codex-rollout-handwritten.jsonl"
ROLLOUT_TOTAL = {
    "input_tokens": 6055836,
    "cached_input_tokens": 4929536,
    "output_tokens": 9118,
    "reasoning_output_tokens": 1759,
    "total_tokens": 6064954,
}


def test_rollout_counts():
    session = parse_files([ROLLOUT])
    assert session.record_counts == {
        "session_meta": 1,
        "event_msg": 67,
        "response_item": 78,
        "turn_context": 3,
    }
    calls = only(session.events, Kind.TOOL_CALL)
    assert len(calls) == 24 + 3 + 2  # function calls, apply_patch calls, web searches
    assert sum(e.diff is not None for e in calls if e.tool_name == "apply_patch") == 3
    reasoning = only(session.events, Kind.REASONING)
    assert len(reasoning) == 13 and all(e.encrypted for e in reasoning)
    assert session.warnings == []


def test_rollout_keeps_the_clis_own_total_verbatim():
    session = parse_files([ROLLOUT])
    assert session.cli_figures == {"last token_count: info.total_token_usage": ROLLOUT_TOTAL}
    assert session.reported_usage.total == ROLLOUT_TOTAL["total_tokens"]  # reasoning not re-added


def test_rollout_usage_sits_only_on_the_model_output_of_each_call():
    session = parse_files([ROLLOUT])
    holders = [e for e in session.events if e.usage is not None]
    assert len(holders) == 32  # the token_count event with ``info: null`` is no API call
    assert {e.kind for e in holders} <= {Kind.REASONING, Kind.ASSISTANT, Kind.TOOL_CALL}
    assert holders[0].kind == Kind.REASONING  # not the AGENTS.md context, not the prompt
    inputs = [e for e in session.events if e.kind in (Kind.USER, Kind.TOOL_RESULT, Kind.SYSTEM)]
    assert all(e.api_call_id is None for e in inputs)


def test_rollout_flags_each_failing_process_once_where_it_ended():
    session = parse_files([ROLLOUT])
    errors = [e for e in session.events if e.is_error]
    assert [e.exit_code for e in errors] == [2, 1, 1]
    assert all("Process exited with code" in e.text for e in errors)
    running = [e for e in session.events if "Process running with session ID" in e.text[:200]]
    assert len(running) == 6
    assert not any(e.is_error or e.exit_code is not None for e in running)


def test_exec_json_keeps_each_turns_usage_as_written():
    session = parse_files([SAMPLES / "codex-exec-json-file-change.jsonl"])
    usage = {"input_tokens": 6008, "cached_input_tokens": 4096, "output_tokens": 51}
    assert session.cli_figures == {"turn.completed usage (turn 1)": usage}
