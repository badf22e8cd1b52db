import json
from pathlib import Path

import pytest

from transcripts.parsers import FORMATS, detect_format, format_choices, parse_files

HERE = Path(__file__).parent
SAMPLES = HERE / "samples"
FIXTURES = HERE / "fixtures"
# One file per format, in the registry's order of precedence.
ONE_OF_EACH = [
    FIXTURES / "claude/odd-records.jsonl",
    SAMPLES / "claude-stream-json-task-subagent.jsonl",
    FIXTURES / "codex/rollout-2026-03-04T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl",
    SAMPLES / "codex-exec-json-command.jsonl",
    FIXTURES / "cursor/stream-json-edit.jsonl",
    FIXTURES / "gemini/stream-json.jsonl",
    FIXTURES / "gemini/session-2026-02-12T14-00-c0ffee00.json",
    FIXTURES / "opencode/run-json.jsonl",
    FIXTURES / "kimi/stream-json.jsonl",
]


def test_choices_list_every_format_once_in_order_of_precedence():
    assert [name for name, _ in format_choices()] == [
        "claude-jsonl",
        "claude-stream-json",
        "codex-rollout",
        "codex-exec-json",
        "cursor-stream-json",
        "gemini-stream-json",
        "gemini-json",
        "opencode-json",
        "kimi-stream-json",
    ]
    assert all(label and label != name for name, label in format_choices())
    assert len({label for _, label in format_choices()}) == len(FORMATS)


@pytest.mark.parametrize(
    ("entry", "path"), list(zip(FORMATS, ONE_OF_EACH, strict=True)), ids=[f.name for f in FORMATS]
)
def test_each_format_detects_its_file_and_its_parser_names_it(entry, path):
    assert detect_format(path) == entry.name
    assert entry.parser([path]).format == entry.name


@pytest.mark.parametrize("first", range(len(FORMATS) - 1))
def test_a_run_mixing_formats_is_read_as_the_earliest_one(first):
    files = ONE_OF_EACH[first:]
    session = parse_files(files[::-1])
    assert session.format == FORMATS[first].name
    ignored = [w for w in session.warnings if w.endswith("a second transcript format, ignored")]
    assert len(ignored) == len(files) - 1


def test_a_line_both_claude_formats_accept_is_stream_json(tmp_path):
    line = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s1",
        "session_id": "s1",
        "parent_tool_use_id": None,
        "message": {"role": "user", "content": "go"},
    }
    path = tmp_path / "both.jsonl"
    path.write_text(json.dumps(line) + "\n")
    assert detect_format(path) == "claude-stream-json"


def test_an_unknown_file_is_refused_with_every_format_named(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": "world"}\n')
    with pytest.raises(ValueError, match="no known transcript format") as refused:
        parse_files([path])
    assert all(label in str(refused.value) for _, label in format_choices())


@pytest.mark.parametrize("path", ONE_OF_EACH, ids=lambda p: p.name)
def test_each_formats_tool_argument_names_reach_the_viewer_from_the_registry(path):
    from transcripts.parsers.formats import FORMATS_BY_NAME, ToolArguments
    from transcripts.payload import build_payload

    session = parse_files([path])
    names = FORMATS_BY_NAME[session.format].arguments
    assert isinstance(names, ToolArguments) and names.paths and names.commands
    assert build_payload(session)["args"] == list(names.summary)


def test_lineage_reads_a_clis_own_argument_names():
    """opencode's edit names its arguments filePath/oldString/newString; Claude Code's Edit
    file_path/old_string/new_string: each session's lineage follows its own CLI's names."""
    from transcripts.lineage import rebuild_lineage
    from transcripts.model import Event, Kind, Session

    def edit(arguments: dict) -> Event:
        return Event(kind=Kind.TOOL_CALL, id="e1", tool_name="edit", arguments=arguments)

    write = {"filePath": "solution.py", "content": "x = 1\n"}
    for fmt, expected in (("opencode-json", 1), ("claude-jsonl", 0)):
        session = Session(id="s", harness="h", format=fmt, events=[edit(write)])
        assert len(rebuild_lineage(session).versions) == expected, fmt
