"""Kimi CLI ``--print --output-format stream-json``: OpenAI-chat-shaped lines with no ``type``.

``{role: assistant, content: [{type: think, think} | {type: text, text}], tool_calls: [...]}``,
``{role: tool, tool_call_id, content}``, ``{role: user, content}``. The stream has no usage and
no timestamps; each assistant line is taken as one API call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transcripts.model import Event, Kind, Session
from transcripts.parsers.common import (
    SessionBuilder,
    as_text,
    edit_diff,
    feed_lines,
    json_or_text,
    raw_event,
)

FORMAT = "kimi-stream-json"
HARNESS = "kimi-cli"


def looks_like(record: dict) -> bool:
    return record.get("role") in ("assistant", "user", "tool", "system") and "type" not in record


def _parts(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [part for part in content if isinstance(part, dict)] if isinstance(content, list) else []


def _text(content: Any) -> str:
    return "".join(as_text(p.get("text")) for p in _parts(content) if p.get("type") == "text")


def _assistant(record: dict, number: int) -> list[Event]:
    events = []
    for part in _parts(record.get("content")):
        if part.get("type") == "think":
            events.append(Event(kind=Kind.REASONING, id="", text=as_text(part.get("think"))))
        elif part.get("type") == "text":
            events.append(Event(kind=Kind.ASSISTANT, id="", text=as_text(part.get("text"))))
    for call in record.get("tool_calls") or []:
        if isinstance(call, dict):
            events.append(_tool_call(call))
    for event in events:
        event.api_call_id = f"message-{number}"
    return events


def _tool_call(call: dict) -> Event:
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    arguments = json_or_text(function.get("arguments"))
    event = Event(kind=Kind.TOOL_CALL, id="", tool_name=as_text(function.get("name")))
    event.call_id, event.arguments = call.get("id"), arguments
    if isinstance(arguments, dict):
        path = arguments.get("path") or arguments.get("file_path")
        event.file_path = path if isinstance(path, str) else None
        event.diff = edit_diff(event.file_path, arguments, "old_string", "new_string")
    return event


def _feed(builder: SessionBuilder, record: dict) -> None:
    role = str(record.get("role"))
    builder.count(role)
    if role == "assistant":
        for event in _assistant(record, builder.session.record_counts[role]):
            builder.add(event)
    elif role == "tool":
        text = _text(record.get("content"))
        is_error = text.lstrip().lower().startswith(("error", "<system>error"))
        builder.add(
            Event(
                kind=Kind.TOOL_RESULT,
                id="",
                call_id=record.get("tool_call_id"),
                text=text,
                is_error=is_error,
            )
        )
    elif role == "user":
        builder.add(Event(kind=Kind.USER, id="", text=_text(record.get("content"))))
    else:
        builder.add(raw_event(record))


def parse(paths: list[Path]) -> Session:
    builder = SessionBuilder(Session(id=paths[0].stem, harness=HARNESS, format=FORMAT))
    for path in paths:
        feed_lines(builder, path, lambda record: _feed(builder, record))
    return builder.session
