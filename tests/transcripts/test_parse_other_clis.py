import json
from pathlib import Path

import pytest

from transcripts.model import Kind, Usage
from transcripts.parsers import detect_format, parse_files

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLES = Path(__file__).parent / "samples"
CURSOR = FIXTURES / "cursor" / "stream-json-edit.jsonl"
GEMINI_STREAM = FIXTURES / "gemini" / "stream-json.jsonl"
GEMINI_CHAT = FIXTURES / "gemini" / "session-2026-02-12T14-00-c0ffee00.json"
KIMI = FIXTURES / "kimi" / "stream-json.jsonl"
OPENCODE = FIXTURES / "opencode" / "run-json.jsonl"


def of_kind(session, kind):
    return [e for e in session.events if e.kind == kind]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (CURSOR, "cursor-stream-json"),
        (GEMINI_STREAM, "gemini-stream-json"),
        (GEMINI_CHAT, "gemini-json"),
        (KIMI, "kimi-stream-json"),
        (OPENCODE, "opencode-json"),
    ],
)
def test_each_cli_format_is_detected_from_content(path, expected):
    assert detect_format(path) == expected


def test_cursor_thinking_deltas_become_one_reasoning_event():
    session = parse_files([CURSOR])
    (reasoning,) = of_kind(session, Kind.REASONING)
    assert reasoning.text == "Read the file, then edit it."
    assert reasoning.timestamp == "2026-02-24T08:00:00.000Z"


def test_cursor_tool_calls_are_named_by_their_key_and_paired_with_results():
    session = parse_files([CURSOR])
    calls = of_kind(session, Kind.TOOL_CALL)
    assert [c.tool_name for c in calls] == ["read", "edit", "shell", "grep"]
    results = {r.call_id: r for r in of_kind(session, Kind.TOOL_RESULT)}
    shell = results["call_shell_1"]
    assert (shell.exit_code, shell.duration_ms, shell.is_error) == (1, 212, True)
    grep = results["call_grep_1"]
    assert (grep.is_error, grep.text) == (True, "ripgrep is not installed")
    assert not results["call_read_1"].is_error


def test_cursor_edit_diff_is_rebuilt_from_before_and_after_content():
    session = parse_files([CURSOR])
    (edit,) = [e for e in session.events if e.tool_name == "edit"]
    assert "-    return x\n+    return x * 2\n" in edit.diff


def test_cursor_result_line_gives_duration_and_usage():
    session = parse_files([CURSOR])
    assert session.id == "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
    assert session.duration_ms == 5120
    assert session.reported_usage == Usage(input=5400, output=310, cache_read=2048)
    assert session.record_counts["interaction_query"] == 1
    assert of_kind(session, Kind.RAW)[0].raw["type"] == "interaction_query"


def test_gemini_stream_merges_assistant_deltas_and_links_tool_results():
    session = parse_files([GEMINI_STREAM])
    assert [e.text for e in of_kind(session, Kind.ASSISTANT)] == [
        "I'll write the kernel and then run pytest.",
        "The test fails; the tiling is wrong.",
    ]
    (write, shell) = of_kind(session, Kind.TOOL_CALL)
    assert write.file_path == "/home/dev/kernels/solution.py"
    (ok, failed) = of_kind(session, Kind.TOOL_RESULT)
    assert (ok.call_id, ok.is_error) == (write.call_id, False)
    assert (failed.call_id, failed.is_error) == (shell.call_id, True)


def test_gemini_stream_result_stats_are_reported():
    session = parse_files([GEMINI_STREAM])
    assert session.models == ["gemini-3-pro-preview"]
    assert session.duration_ms == 10100
    assert session.reported_usage == Usage(input=13900 - 8192, output=420, cache_read=8192)


def test_gemini_saved_chat_puts_message_tokens_on_the_first_event_of_each_call():
    session = parse_files([GEMINI_CHAT])
    assert session.id == "c0ffee00-1111-4222-8333-444455556666"
    first = session.events[1]
    assert (first.kind, first.api_call_id) == (Kind.REASONING, "m-2")
    assert first.usage == Usage(input=9000 - 4096, output=120 + 300, cache_read=4096, reasoning=300)
    assert len([e for e in session.events if e.usage]) == 3
    assert session.ended_at == "2026-02-12T14:00:10.100Z"


def test_gemini_saved_chat_tool_results_come_from_function_responses():
    session = parse_files([GEMINI_CHAT])
    results = of_kind(session, Kind.TOOL_RESULT)
    assert results[0].text.startswith("Successfully created")
    assert (results[1].text, results[1].is_error) == ("Command exited with code 1: 1 failed", True)
    assert [e.subtype for e in of_kind(session, Kind.SYSTEM)] == ["info"]


def test_gemini_json_output_object_is_read(tmp_path):
    output = tmp_path / "gemini.json"
    output.write_text(
        '{"session_id": "s-1", "response": "Done.", "stats": {"models": {"gemini-3-flash": '
        '{"api": {"totalRequests": 2}, "tokens": {"prompt": 900, "candidates": 30, '
        '"total": 960, "cached": 100, "thoughts": 30, "tool": 0}}}}}'
    )
    session = parse_files([output])
    assert (session.id, session.models) == ("s-1", ["gemini-3-flash"])
    assert of_kind(session, Kind.ASSISTANT)[0].text == "Done."
    assert session.reported_usage == Usage(input=800, output=60, cache_read=100, reasoning=30)


def test_kimi_lines_give_thinking_text_tool_calls_and_an_edit_diff():
    session = parse_files([KIMI])
    assert of_kind(session, Kind.REASONING)[0].text == "I need to see the file first."
    calls = of_kind(session, Kind.TOOL_CALL)
    assert [c.tool_name for c in calls] == ["ReadFile", "StrReplaceFile"]
    assert calls[0].arguments == {"path": "solution.py"}
    assert "+def forward(x, w, b):" in calls[1].diff
    results = of_kind(session, Kind.TOOL_RESULT)
    assert [r.call_id for r in results] == ["ReadFile:0", "StrReplaceFile:1"]


def test_opencode_steps_carry_usage_cost_and_tool_durations():
    session = parse_files([OPENCODE])
    assert session.id == "ses_4a1b2c3d4e5fAbCdEfGhIjKl"
    assert session.cost_usd == pytest.approx(0.0168)
    assert session.usage() == Usage(
        input=4500, output=284, cache_read=5724, cache_write=512, reasoning=64
    )
    results = of_kind(session, Kind.TOOL_RESULT)
    assert [(r.duration_ms, r.is_error) for r in results] == [(500, False), (1500, True)]
    assert results[1].text == "Command failed with exit code 1"


def test_opencode_edit_keeps_the_tool_diff_and_errors_become_notices():
    session = parse_files([OPENCODE])
    (edit,) = [e for e in session.events if e.tool_name == "edit"]
    assert "+    x = tl.load(ptr + offs, mask=offs < n)" in edit.diff
    assert edit.file_path == "/home/dev/kernels/solution.py"
    (notice,) = of_kind(session, Kind.SYSTEM)
    assert (notice.subtype, notice.text) == ("api_error", "Rate limit exceeded")
    assert notice.is_error
    assert session.started_at == "2026-02-24T10:46:40.000Z"


# A hand-written saved Gemini CLI chat (gemini-3-pro; see samples/README.md). Summed over its
# messages' own ``tokens``: input 97,015 (cached 84,364 of them), output 473, thoughts 1,727,
# total 99,215.
GEMINI_FILE_OPS = SAMPLES / "gemini-chat-file-ops-handwritten.json"


def test_gemini_saved_chat_counts_and_tokens():
    assert detect_format(GEMINI_FILE_OPS) == "gemini-json"
    session = parse_files([GEMINI_FILE_OPS])
    assert session.record_counts == {"user": 5, "gemini": 11}
    calls = of_kind(session, Kind.TOOL_CALL)
    assert len(calls) == 14 and len(of_kind(session, Kind.TOOL_RESULT)) == 14
    assert sum(e.tool_name == "read_file" for e in calls) == 6
    usage = session.usage()
    assert usage == Usage(input=97015 - 84364, output=473 + 1727, cache_read=84364, reasoning=1727)
    assert usage.total == 99215  # the sum of the messages' own ``total``


# Gemini CLI 0.61.0's own chat log (JSON lines), recorded by running the pinned CLI against the
# launcher tests' scripted model server (see samples/README.md).
GEMINI_CHAT_LINES = SAMPLES / "gemini-chat-jsonl-0.61.0-recorded.jsonl"


def test_gemini_chat_lines_fold_into_one_event_per_message_and_call():
    assert detect_format(GEMINI_CHAT_LINES) == "gemini-json"
    session = parse_files([GEMINI_CHAT_LINES])
    assert session.id == "2de0398a-6e08-4ccc-8f4d-c5631a00df32" and not session.warnings
    # each model message is written twice (before and with its tool calls); the user lines that
    # only carry function responses repeat the calls' results
    assert session.record_counts == {"user": 2, "gemini": 6, "function_response": 5}
    calls = of_kind(session, Kind.TOOL_CALL)
    assert [c.tool_name for c in calls] == [
        "read_file",
        "write_file",
        "run_shell_command",
        "replace",
        "run_shell_command",
    ]
    results = of_kind(session, Kind.TOOL_RESULT)
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    # write_file and replace carry the fileDiff Gemini CLI kept, from its --- line on
    write, edit = calls[1], calls[3]
    assert write.diff.splitlines()[:3] == [
        "--- solution.py\tOriginal", "+++ solution.py\tWritten", "@@ -0,0 +1,2 @@"
    ]  # fmt: skip
    assert "-    return [max(r) for r in x]\n+    return [sum(r) for r in x]\n" in edit.diff
    assert calls[0].diff is None and calls[2].diff is None
    assert [(r.exit_code, r.is_error) for r in results][2] == (1, True)
    assert not any(r.is_error for r in results[3:])
    assert session.usage() == Usage(input=6 * 1200, output=6 * 40)
    assert session.ended_at == "2026-11-27T09:17:18.599Z"


def test_gemini_chat_lines_follow_rewinds_and_replaced_message_lists(tmp_path):
    log = tmp_path / "session-2026-11-27T09-00-aaaa0000.jsonl"
    lines = [
        {"sessionId": "aaaa0000", "projectHash": "f0", "startTime": "2026-11-27T09:00:00Z"},
        {"$set": {"messages": [{"id": "u0", "type": "user", "content": [{"text": "setup"}]}]}},
        {"id": "u1", "type": "user", "content": [{"text": "first try"}]},
        {"id": "g1", "type": "gemini", "content": "dropped by the rewind"},
        {"$rewindTo": "g1"},
        {"id": "g2", "type": "gemini", "content": "kept"},
        {"$set": {"lastUpdated": "2026-11-27T09:00:05Z"}},
    ]
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    session = parse_files([log])
    assert [e.text for e in session.events] == ["setup", "first try", "kept"]
    assert session.ended_at == "2026-11-27T09:00:05Z"
    assert session.warnings == [f"{log.name}:8: malformed JSON, skipped"]
