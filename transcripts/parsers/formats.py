"""The transcript formats the parsers read: one registry, in order of precedence.

The order settles two things: which format claims a record that several detectors accept, and
which format a run's transcript is read as when its files hold several (the others are ignored
with a warning). The platform derives its choices from ``format_choices()``; importing this
module loads the parsers (pure Python, standard library only) and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Format:
    name: str  # stored in Session.format and by the platform
    label: str  # for people: forms, the admin, error messages
    detector: Callable[[dict], bool]  # does this JSON record belong to the format?
    parser: Callable[[list[Path]], Session]  # every file of one run in this format
    # Where the parser fills the model differently from the rest (``transcripts.figures``):
    cost_summed_per_call: bool = False  # Session.cost_usd adds per-call costs; no CLI total
    call_ids_are_turns: bool = False  # Event.api_call_id names a whole turn, not one API call


def _claude_session_record(record: dict) -> bool:
    # A stream-json line may carry a session file's keys too; stream-json claims it.
    return claude_jsonl.looks_like(record) and not claude_stream.looks_like(record)


FORMATS: tuple[Format, ...] = (
    Format(
        claude_jsonl.FORMAT,
        "Claude Code session JSONL",
        _claude_session_record,
        claude_tree.parse,
        cost_summed_per_call=True,
    ),
    Format(
        claude_stream.FORMAT,
        "Claude Code stream-json",
        claude_stream.looks_like,
        claude_stream.parse,
    ),
    Format(codex_rollout.FORMAT, "Codex rollout", codex_rollout.looks_like, codex_rollout.parse),
    Format(
        codex.FORMAT, "codex exec --json", codex.looks_like, codex.parse, call_ids_are_turns=True
    ),
    Format(cursor.FORMAT, "Cursor Agent stream-json", cursor.looks_like, cursor.parse),
    Format(gemini.STREAM_FORMAT, "Gemini CLI stream-json", gemini.looks_like, gemini.parse_stream),
    Format(
        gemini.DOCUMENT_FORMAT,
        "Gemini CLI JSON (output or saved chat)",
        gemini.looks_like_document,
        gemini_chat.parse_document,
    ),
    Format(
        opencode.FORMAT,
        "opencode run --format json",
        opencode.looks_like,
        opencode.parse,
        cost_summed_per_call=True,
    ),
    Format(kimi.FORMAT, "Kimi CLI stream-json", kimi.looks_like, kimi.parse),
)

FORMATS_BY_NAME: dict[str, Format] = {entry.name: entry for entry in FORMATS}


def format_choices() -> list[tuple[str, str]]:
    """(name, label) of every format, in precedence order: Django ``choices`` as they are."""
    return [(entry.name, entry.label) for entry in FORMATS]


def detect_record(record: dict) -> Format | None:
    """The first format whose detector accepts this record."""
    return next((entry for entry in FORMATS if entry.detector(record)), None)
