import json
from pathlib import Path

import pytest

from transcripts.model import Session
from transcripts.parsers import parse_files
from transcripts.redact import redact_session

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
