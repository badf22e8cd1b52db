"""Rebuilding every version of a file from parsed transcripts: the real samples, checked against
what Claude Code itself recorded (``toolUseResult.originalFile`` before each edit) and against
hand-read content, plus each way an agent writes a file."""

import json
from pathlib import Path

import pytest

from transcripts.lineage import check_final, rebuild_lineage, sha256_text
from transcripts.model import Event, Kind, Session, Usage
from transcripts.parsers import parse_files, session_files_for

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "transcripts" / "samples"
# the steering folder's samples, beside a checkout; CI's fresh clone may not have it
SHARED = ROOT.parent / "shared" / "samples" / "transcripts"
EDITS = "claude-jsonl-edits-3fe1b6bc.jsonl"
SPEC = "tech-spec-codex-metrics-plugin.md"
EXAMPLE = ROOT / "examples" / "softmax-run"


def test_eighteen_claude_edits_rebuild_every_state_claude_code_recorded():
    lineage = rebuild_lineage(parse_files([SAMPLES / EDITS]), target=SPEC)
    recorded = _claude_edit_records(SAMPLES / EDITS)
    assert len(recorded) == 18 and len(lineage.versions) == 19
    for version, edit in zip(lineage.versions, recorded, strict=False):
        assert version.content == edit["originalFile"]  # the file as Claude Code saw it
    last = recorded[-1]
    assert lineage.final.content == last["originalFile"].replace(
        last["oldString"], last["newString"], 1
    )
    assert [v.how for v in lineage.versions] == ["write"] + ["edit"] * 18


@pytest.mark.skipif(not (SHARED / EDITS).exists(), reason="no steering folder beside the checkout")
def test_the_shared_copy_of_the_edits_sample_rebuilds_the_same_final_file():
    ours = rebuild_lineage(parse_files([SAMPLES / EDITS]), target=SPEC).final
    shared = rebuild_lineage(parse_files([SHARED / EDITS]), target=SPEC).final
    assert shared.sha256 == ours.sha256


def test_the_edits_sample_rebuilds_its_final_file():
    ours = rebuild_lineage(parse_files([SAMPLES / EDITS]), target=SPEC).final
    assert ours.sha256 == sha256_text(ours.content)
    assert len(ours.content) == 36579
    assert ours.content.startswith("# Tech-Spec: Codex Metrics Plugin Implementation\n\n")
    assert ours.content.endswith("\n---\n\n**End of Technical Specification**\n")


def test_versions_carry_turn_tokens_and_wall_time_so_far():
    versions = rebuild_lineage(parse_files([SAMPLES / EDITS]), target=SPEC).versions
    assert (versions[0].turn, versions[0].output_tokens, versions[0].wall_s) == (
        16,
        10272,
        3701.209,
    )
    assert [v.turn for v in versions] == sorted(v.turn for v in versions)
    assert versions[-1].output_tokens == 32860


def test_a_write_then_an_edit_in_the_claude_agent_beside_sample():
    files = session_files_for(
        SAMPLES / "claude-agent-beside-handwritten" / "3e8b51d2-6a47-4c09-b1f3-9d0e2c4a6b85.jsonl"
    )
    first, second = rebuild_lineage(parse_files(files), target="greet.py").versions
    body = (
        "\nimport sys\n\n\ndef greet(name):\n"
        '    return f"Good morning, {name}."\n\n\nif __name__ == "__main__":\n'
        '    print(greet(sys.argv[1] if len(sys.argv) > 1 else "there"))\n'
    )
    comment = "# Prints a greeting for the name given on the command line.\n"
    assert first.content == "#!/usr/bin/env python3\n" + body
    assert second.content == "#!/usr/bin/env python3\n" + comment + body


def test_gemini_write_file_calls_are_three_versions():
    sample = SAMPLES / "gemini-chat-file-ops-handwritten.json"
    versions = rebuild_lineage(parse_files([sample]), target="notes.md").versions
    assert [v.content.splitlines()[:2] for v in versions] == [
        ["# Tuning notes"],
        ["# Tuning notes", "BLOCK is the next power of two at or above n_cols."],
        ["# Tuning notes", "num_warps goes from 4 to 8 once BLOCK reaches 2048 (softmax only)."],
    ]


def test_a_codex_patch_of_a_file_never_seen_whole_is_an_unknown_version():
    sample = SAMPLES / "codex-rollout-handwritten.jsonl"
    lineage = rebuild_lineage(parse_files([sample]), target="layernorm.py")
    [version] = lineage.versions
    assert (version.how, version.content, version.tool) == ("patch", None, "apply_patch")
    assert check_final(lineage, "anything").status == "unknown"


def test_a_codex_file_change_without_content_is_flagged():
    lineage = rebuild_lineage(
        parse_files([SAMPLES / "codex-exec-json-file-change.jsonl"]), target="hello.txt"
    )
    assert [(v.how, v.content) for v in lineage.versions] == [("opaque", None)]
    assert check_final(lineage, "hello\n").mismatch


def test_the_example_run_rebuilds_its_three_versions_and_matches_its_solution():
    lineage = rebuild_lineage(parse_files([EXAMPLE / "transcript.jsonl"]))
    starter = (ROOT / "runners" / "problems" / "softmax" / "starter.py").read_text()
    solution = (EXAMPLE / "solution.py").read_text()
    first, fixed, final = lineage.versions
    assert first.content == starter.replace('other=-float("inf")', "other=0.0")
    assert fixed.content == starter
    assert final.content == solution
    assert [(v.turn, v.output_tokens, v.wall_s) for v in lineage.versions] == [
        (1, 610, 20.0),
        (3, 890, 75.0),
        (5, 2395, 160.0),
    ]
    assert check_final(lineage, solution).status == "match"
    assert check_final(lineage, solution + "# changed after the session\n").status == "differs"
    assert (
        check_final(rebuild_lineage(Session(id="s", harness="x", format="x")), solution).status
        == "none"
    )


def _call(name, arguments, *, call_id="c", path=None, usage=None, ts=None):
    return Event(
        kind=Kind.TOOL_CALL,
        id=f"e-{call_id}",
        tool_name=name,
        call_id=call_id,
        arguments=arguments,
        file_path=path,
        usage=usage,
        timestamp=ts,
    )


def _session(*events):
    return Session(id="s", harness="codex", format="codex-rollout", events=list(events))


def test_codex_apply_patch_adds_then_updates_the_file():
    add = "*** Begin Patch\n*** Add File: solution.py\n+import torch\n+x = 1\n+y = 2\n*** End Patch"
    update = (
        "*** Begin Patch\n*** Update File: solution.py\n@@\n import torch\n-x = 1\n+x = 10\n"
        " y = 2\n*** End Patch"
    )
    versions = rebuild_lineage(
        _session(
            _call("apply_patch", add, call_id="a"),
            _call("apply_patch", {"input": update}, call_id="b"),
        )
    ).versions
    assert [v.content for v in versions] == [
        "import torch\nx = 1\ny = 2\n",
        "import torch\nx = 10\ny = 2\n",
    ]


def test_a_shell_heredoc_is_a_version_and_sed_in_place_breaks_the_chain():
    heredoc = "cat > solution.py <<'EOF'\nprint('v1')\nEOF\npython check.py"
    codex_style = ["bash", "-lc", "cat <<EOF > ./solution.py\nprint('v2')\nEOF"]
    versions = rebuild_lineage(
        _session(
            _call("exec_command", {"cmd": heredoc}, call_id="a"),
            _call("shell", {"command": "cat solution.py"}, call_id="r"),
            _call("shell", {"command": codex_style}, call_id="b"),
            _call("shell", {"command": "sed -i 's/v2/v3/' solution.py"}, call_id="c"),
        )
    ).versions
    assert [(v.how, v.content) for v in versions] == [
        ("shell", "print('v1')\n"),
        ("shell", "print('v2')\n"),
        ("opaque", None),
    ]


def test_a_failed_edit_changes_nothing_and_multi_edit_applies_in_order():
    failed = Event(kind=Kind.TOOL_RESULT, id="r", call_id="bad", is_error=True)
    versions = rebuild_lineage(
        _session(
            _call(
                "Write", {"file_path": "/w/solution.py", "content": "a = 1\nb = 2\n"}, call_id="w"
            ),
            _call(
                "Edit",
                {"file_path": "/w/solution.py", "old_string": "zzz", "new_string": "q"},
                call_id="bad",
            ),
            failed,
            _call(
                "MultiEdit",
                {
                    "file_path": "/w/solution.py",
                    "edits": [
                        {"old_string": "a = 1", "new_string": "a = 3"},
                        {"old_string": "a = 3\nb", "new_string": "a = 3\nc"},
                    ],
                },
                call_id="m",
            ),
            _call(
                "Write",
                {"file_path": "/w/solution.py", "content": "a = 3\nc = 2\n"},
                call_id="same",
            ),
            _call("Write", {"file_path": "/w/other.py", "content": "x"}, call_id="o"),
        )
    ).versions
    assert [v.content for v in versions] == ["a = 1\nb = 2\n", "a = 3\nc = 2\n"]


def test_a_subagents_write_counts_where_the_subagent_ran():
    child = _session(_call("Write", {"file_path": "solution.py", "content": "sub\n"}, call_id="s"))
    spawn = _call("Task", {"prompt": "write it"}, call_id="t", usage=Usage(output=5))
    spawn.children = [child]
    main_write = _call(
        "Write",
        {"file_path": "solution.py", "content": "main\n"},
        call_id="m",
        usage=Usage(output=7),
    )
    versions = rebuild_lineage(_session(spawn, main_write)).versions
    assert [(v.content, v.turn, v.output_tokens) for v in versions] == [
        ("sub\n", 1, 5),
        ("main\n", 2, 12),
    ]


def _claude_edit_records(path: Path) -> list[dict]:
    records = []
    for line in path.read_text().splitlines():
        detail = json.loads(line).get("toolUseResult")
        if (
            isinstance(detail, dict)
            and "oldString" in detail
            and detail.get("filePath", "").endswith(SPEC)
        ):
            records.append(detail)
    return records
