"""Read any supported agent CLI's transcript files into one ``transcripts.model.Session``.

``parse_files`` takes every file of a run (main transcript, subagent files, side files such as
``agent-<id>.meta.json``), recognizes the format from content, and links subagents.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from transcripts.model import Session
from transcripts.parsers import (
    claude_jsonl,
    claude_stream,
    claude_tree,
    codex,
    codex_rollout,
    cursor,
    gemini,
    gemini_chat,
    kimi,
    opencode,
)
from transcripts.parsers.claude_jsonl import session_files_for
from transcripts.parsers.common import (
    TranscriptError,
    clean_session,
    decode_json,
    number_events,
    read_lines,
)

__all__ = ["TranscriptError", "detect_format", "parse_files", "session_files_for"]

SNIFF_LINES = 40
_WHOLE_JSON_LIMIT = 256 * 1024 * 1024


def _parsers() -> dict:
    """Format name -> parse function; earlier formats win when a run mixes several."""
    return {
        claude_jsonl.FORMAT: claude_tree.parse,
        claude_stream.FORMAT: claude_stream.parse,
        codex_rollout.FORMAT: codex_rollout.parse,
        codex.FORMAT: codex.parse,
        cursor.FORMAT: cursor.parse,
        gemini.STREAM_FORMAT: gemini.parse_stream,
        gemini.DOCUMENT_FORMAT: gemini_chat.parse_document,
        opencode.FORMAT: opencode.parse,
        kimi.FORMAT: kimi.parse,
    }


def _sniffers() -> list:
    return [
        (claude_stream.looks_like, claude_stream.FORMAT),
        (claude_jsonl.looks_like, claude_jsonl.FORMAT),
        (codex_rollout.looks_like, codex_rollout.FORMAT),
        (codex.looks_like, codex.FORMAT),
        (cursor.looks_like, cursor.FORMAT),
        (gemini.looks_like, gemini.STREAM_FORMAT),
        (gemini.looks_like_document, gemini.DOCUMENT_FORMAT),
        (opencode.looks_like, opencode.FORMAT),
        (kimi.looks_like, kimi.FORMAT),
    ]


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
    return next((name for looks_like, name in _sniffers() if looks_like(record)), None)


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
    session = _parsers()[name](by_format.pop(name))
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
    for name in _parsers():
        if name in by_format:
            return name
    return next(iter(by_format))


def _nothing_readable(paths: list[Path]) -> str:
    names = ", ".join(p.name for p in paths)
    if all(not _has_content(p) for p in paths):
        return f"the transcript is empty: {names}"
    return (
        f"no known transcript format in {names}: expected Claude Code, Codex, Cursor, Gemini CLI, "
        "Kimi CLI or opencode JSON output"
    )


def _load_whole(path: Path):
    """A file that is one JSON document rather than JSON lines (Gemini's saved sessions)."""
    if path.stat().st_size > _WHOLE_JSON_LIMIT:
        return None
    try:
        return decode_json(path.read_bytes())
    except ValueError:
        return None
