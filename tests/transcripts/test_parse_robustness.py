import json
from pathlib import Path

import pytest

from transcripts.model import Kind, Session
from transcripts.parsers import TranscriptError, parse_files
from transcripts.parsers.common import MAX_JSON_DEPTH, MAX_SUBAGENT_DEPTH
from transcripts.redact import redact_session
from transcripts.render import render_html

HERE = Path(__file__).parent
FILES = sorted(
    [*HERE.glob("samples/*.jsonl"), *HERE.glob("fixtures/**/*.jsonl")],
    key=lambda p: p.as_posix(),
)
KEEP = {"type", "subtype", "role", "sessionId", "session_id", "payload", "part", "sessionID"}


def spoil(value, wrong):
    """Every field below the record's own type markers gets a value of the wrong type."""
    if isinstance(value, dict):
        return {
            k: v if k in KEEP and not isinstance(v, dict) else spoil(v, wrong)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [spoil(item, wrong) for item in value]
    return wrong


def spoil_line(line: str, wrong) -> str:
    try:
        return json.dumps(spoil(json.loads(line), wrong))
    except ValueError:
        return line  # the malformed-line fixture stays malformed


@pytest.mark.parametrize("wrong", [None, 7, [], {}, [["nested"]], "text"], ids=repr)
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_records_with_fields_of_the_wrong_type_never_break_parsing(tmp_path, path, wrong):
    lines = path.read_text().splitlines()[:60]
    spoiled = [spoil_line(line, wrong) for line in lines if line.strip()]
    copy = tmp_path / path.name
    copy.write_text("\n".join(spoiled) + "\n")
    session = redact_session(parse_files([copy]))
    assert Session.from_dict(session.to_dict()) == session
    assert sum(session.record_counts.values()) + len(session.warnings) > 0


def check_survives_storage_and_rendering(session: Session) -> str:
    redact_session(session)
    assert Session.from_dict(json.loads(json.dumps(session.to_dict()))) == session
    page = render_html(session, context={})
    data = page.split('id="run-data">', 1)[1].split("</script>", 1)[0]
    json.loads(data, parse_constant=_refuse)  # what the browser's JSON.parse accepts
    return page


def _refuse(name: str):
    raise AssertionError(f"{name} in the page data: JSON.parse would refuse the whole page")


def write_lines(path: Path, records: list) -> Path:
    path.write_text("".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in records))
    return path


def claude_record(uuid: str, **fields) -> dict:
    return {"type": "user", "uuid": uuid, "sessionId": "s1", **fields}


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5_000, 100_000])
def test_json_nested_too_deeply_is_kept_as_text_and_the_rest_still_parses(tmp_path, depth):
    deep = "[" * depth + "]" * depth
    line = f'{{"type":"mystery","uuid":"u2","sessionId":"s1","data":{deep}}}\n'
    prompt = claude_record("u1", message={"role": "user", "content": "hi"})
    session = parse_files([write_lines(tmp_path / "s1.jsonl", [prompt, line])])
    assert [e.kind for e in session.events] == [Kind.USER, Kind.RAW]
    assert session.events[1].text == line.rstrip("\n")
    assert session.warnings == ["s1.jsonl:2: JSON nested too deeply kept as raw text"]
    check_survives_storage_and_rendering(session)


def test_tool_arguments_nested_too_deeply_stay_the_string_the_cli_wrote(tmp_path):
    arguments = '{"a":' * 500 + "1" + "}" * 500
    records = [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "r1"}},
        {
            "timestamp": "2026-01-01T00:00:01Z",
            "type": "response_item",
            "payload": {"type": "function_call", "name": "shell", "arguments": arguments},
        },
    ]
    (call,) = parse_files([write_lines(tmp_path / "rollout-r1.jsonl", records)]).events
    assert call.arguments == arguments


def test_nan_and_infinities_are_kept_as_names_that_the_page_can_parse(tmp_path):
    line = (
        '{"type":"mystery","uuid":"u1","sessionId":"s1","costUSD":NaN,'
        '"figures":[Infinity,-Infinity,1e400,2.5]}\n'
    )
    session = parse_files([write_lines(tmp_path / "s1.jsonl", [line])])
    (event,) = session.events
    assert event.raw["figures"] == ["Infinity", "-Infinity", "1e400", 2.5]
    assert session.cost_usd is None
    check_survives_storage_and_rendering(session)


def test_timestamps_out_of_any_calendar_are_dropped_not_fatal(tmp_path):
    records = [
        {"type": "text", "timestamp": 10**30, "sessionID": "s", "part": {"text": "a"}},
        {"type": "text", "timestamp": -1e300, "sessionID": "s", "part": {"text": "b"}},
        {"type": "text", "timestamp": 1_767_225_600_000, "sessionID": "s", "part": {"text": "c"}},
    ]
    session = parse_files([write_lines(tmp_path / "run.jsonl", records)])
    assert [(e.text, e.timestamp) for e in session.events] == [
        ("a", None),
        ("b", None),
        ("c", "2026-01-01T00:00:00.000Z"),
    ]


def test_binary_junk_alone_is_refused_and_after_a_transcript_is_kept_as_text(tmp_path):
    junk = bytes(range(256)) * 400
    alone = tmp_path / "junk.jsonl"
    alone.write_bytes(junk)
    with pytest.raises(TranscriptError, match="no known transcript format"):
        parse_files([alone])
    prompt = json.dumps(claude_record("u1", message={"role": "user", "content": "hi"}))
    mixed = tmp_path / "s1.jsonl"
    mixed.write_bytes(prompt.encode() + b"\n" + junk)
    session = parse_files([mixed])
    assert session.events[0].text == "hi"
    assert all(e.kind == Kind.RAW and e.text for e in session.events[1:])
    check_survives_storage_and_rendering(session)


def test_a_huge_single_line_is_kept_whole(tmp_path):
    text = "0123456789" * 600_000
    prompt = claude_record("u1", message={"role": "user", "content": text})
    session = parse_files([write_lines(tmp_path / "s1.jsonl", [prompt])])
    assert session.events[0].text == text
    assert text in check_survives_storage_and_rendering(session)


def stream_chain(levels: int) -> list[dict]:
    """Stream-json lines in which every subagent spawns the next one."""
    init = {"type": "system", "subtype": "init", "session_id": "s", "claude_code_version": "2"}
    lines = [init]
    for level in range(levels):
        block = {"type": "tool_use", "id": f"t{level + 1}", "name": "Task", "input": {}}
        lines.append(
            {
                "type": "assistant",
                "parent_tool_use_id": f"t{level}" if level else None,
                "session_id": "s",
                "message": {"id": f"m{level}", "content": [block]},
            }
        )
    return lines


def test_a_subagent_chain_deeper_than_the_limit_keeps_every_agent_at_bounded_depth(tmp_path):
    levels = 3 * MAX_SUBAGENT_DEPTH + 5
    session = parse_files([write_lines(tmp_path / "stream.jsonl", stream_chain(levels))])
    depths = {part.agent_id: depth for depth, part in session.walk() if depth}
    assert set(depths) == {f"t{n}" for n in range(1, levels)}
    assert max(depths.values()) == MAX_SUBAGENT_DEPTH
    too_deep = [w for w in session.warnings if "levels deep" in w]
    assert len(too_deep) == (levels - 1) // MAX_SUBAGENT_DEPTH
    check_survives_storage_and_rendering(session)


def agent_spawning(agent_id: str, spawned: str) -> list[dict]:
    """A Claude Code subagent file whose one Task call reports ``spawned`` as its agent."""
    envelope = {"sessionId": "s1", "isSidechain": True, "agentId": agent_id}
    call = {"type": "tool_use", "id": f"call-{spawned}", "name": "Task", "input": {}}
    result = {"type": "tool_result", "tool_use_id": f"call-{spawned}", "content": "done"}
    return [
        {
            "type": "assistant",
            "uuid": f"{agent_id}-1",
            **envelope,
            "message": {"id": f"m-{agent_id}", "content": [call]},
        },
        {
            "type": "user",
            "uuid": f"{agent_id}-2",
            **envelope,
            "message": {"role": "user", "content": [result]},
            "toolUseResult": {"agentId": spawned},
        },
    ]


def test_agents_that_spawn_each_other_in_a_cycle_are_each_kept_once(tmp_path):
    prompt = claude_record("u1", message={"role": "user", "content": "hi"})
    files = [
        write_lines(tmp_path / "s1.jsonl", [prompt]),
        write_lines(tmp_path / "agent-aaa.jsonl", agent_spawning("aaa", "bbb")),
        write_lines(tmp_path / "agent-bbb.jsonl", agent_spawning("bbb", "aaa")),
    ]
    session = parse_files(files)
    agents = [part.agent_id for depth, part in session.walk() if depth]
    assert sorted(agents) == ["aaa", "bbb"]
    assert session.warnings == ["subagent aaa: no spawning tool call found"]
    check_survives_storage_and_rendering(session)
