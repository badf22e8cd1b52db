"""Read any supported agent CLI's transcript files into one ``transcripts.model.Session``.

``parse_files`` takes every file of a run (main transcript, subagent files, side files such as
``agent-<id>.meta.json``), recognizes the format from content, and links subagents.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from transcripts.model import Session
from transcripts.parsers import claude_jsonl, gemini
from transcripts.parsers.claude_jsonl import session_files_for
from transcripts.parsers.common import (
    TranscriptError,
    clean_session,
    decode_json,
    number_events,
    read_lines,
)
from transcripts.parsers.formats import (
    FORMATS,
    FORMATS_BY_NAME,
    Format,
    detect_record,
    format_choices,
)

__all__ = [
    "FORMATS",
    "Format",
    "TranscriptError",
    "detect_format",
    "format_choices",
    "parse_files",
    "session_files_for",
]

SNIFF_LINES = 40
_WHOLE_JSON_LIMIT = 256 * 1024 * 1024


def detect_format(path: Path) -> str | None:
    """The format name of one file, judged from its first records; None when unrecognized."""
    path = Path(path)
    if path.name.endswith(".meta.json"):
        return claude_jsonl.FORMAT
    records = [line.record for line in islice(read_lines(path), SNIFF_LINES)]
    for record in records:
        found = _sniff(record) if isinstance(record, dict) else None
        if found:
            return found
    if records and records[0] is None:  # a JSON document spread over several lines
        document = _load_whole(path)
        if isinstance(document, dict) and gemini.looks_like_document(document):
            return gemini.DOCUMENT_FORMAT
    return None


def _sniff(record: dict) -> str | None:
    if not isinstance(record.get("type"), str | None):
        return None
    found = detect_record(record)
    return found.name if found else None


def parse_files(paths: list[Path]) -> Session:
    """Parse the files of one run; raise ``TranscriptError`` when none holds a known format."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise TranscriptError("no transcript files were given")
    by_format: dict[str, list[Path]] = {}
    unknown = []
    for path in paths:
        found = _detect(path) if _has_content(path) else None
        if found is None:
            unknown.append(path)
        else:
            by_format.setdefault(found, []).append(path)
    if not by_format:
        raise TranscriptError(_nothing_readable(paths))
    name = _primary_format(by_format)
    session = FORMATS_BY_NAME[name].parser(by_format.pop(name))
    session.warnings += [f"{p}: not part of the {name} transcript, ignored" for p in unknown]
    for other in by_format.values():
        session.warnings += [f"{p}: a second transcript format, ignored" for p in other]
    for _, part in session.walk():
        clean_session(part)
    number_events(session)
    return session


def _detect(path: Path) -> str | None:
    try:
        return detect_format(path)
    except OSError as error:
        raise TranscriptError(f"cannot read {path}: {error.strerror}") from error


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError as error:
        raise TranscriptError(f"cannot read {path}: {error.strerror}") from error


def _primary_format(by_format: dict[str, list[Path]]) -> str:
    return next(entry.name for entry in FORMATS if entry.name in by_format)


def _nothing_readable(paths: list[Path]) -> str:
    names = ", ".join(p.name for p in paths)
    if all(not _has_content(p) for p in paths):
        return f"the transcript is empty: {names}"
    known = "; ".join(entry.label for entry in FORMATS)
    return f"no known transcript format in {names}: expected one of {known}"


def _load_whole(path: Path):
    """A file that is one JSON document rather than JSON lines (Gemini's saved sessions)."""
    if path.stat().st_size > _WHOLE_JSON_LIMIT:
        return None
    try:
        return decode_json(path.read_bytes())
    except ValueError:
        return None
