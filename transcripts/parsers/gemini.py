"""Gemini CLI: ``--output-format stream-json`` events, saved chat files
(``~/.gemini/tmp/<project>/chats/session-*.json``, JSON lines in ``session-*.jsonl`` since 0.61
at the latest) and the one-object ``--output-format json``.

Gemini counts ``input`` with cached tokens inside and ``thoughts`` outside ``output``; in our
``Usage`` input excludes the cache and output includes the thoughts (``reasoning`` repeats them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transcripts.model import Event, Kind, Session, Usage
from transcripts.parsers.common import (
    SessionBuilder,
    as_int,
    as_text,
    feed_files,
    raw_event,
)

STREAM_FORMAT = "gemini-stream-json"
DOCUMENT_FORMAT = "gemini-json"
HARNESS = "gemini-cli"


def looks_like(record: dict) -> bool:
    return record.get("type") == "init" and "session_id" in record and "model" in record


def looks_like_document(record: dict) -> bool:
    """A saved chat, the first line of a JSON-lines chat (its header), or the JSON output."""
    chat = "sessionId" in record and (
        isinstance(record.get("messages"), list) or "projectHash" in record
    )
    return chat or ("response" in record and isinstance(record.get("stats"), dict))


def gemini_usage(tokens: Any) -> Usage | None:
    if not isinstance(tokens, dict):
        return None
    cached = as_int(tokens.get("cached"))
    thoughts = as_int(tokens.get("thoughts"))
    prompt = as_int(tokens.get("input", tokens.get("prompt")))
    output = as_int(tokens.get("output", tokens.get("candidates")))
    return Usage(
        input=max(prompt - cached, 0),
        output=output + thoughts,
        cache_read=cached,
        reasoning=thoughts,
    )


class StreamReader:
    def __init__(self, session: Session):
        self.builder = SessionBuilder(session)
        self.last_delta: Event | None = None  # the assistant message that deltas extend

    def feed(self, record: dict) -> None:
        kind = str(record.get("type"))
        self.builder.count(kind)
        timestamp = record.get("timestamp")
        self.builder.note_time(timestamp)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            self.builder.add(raw_event(record, timestamp))
            return
        event = handler(record)
        if event is not None:
            event.timestamp = event.timestamp or timestamp
            self.builder.add(event)

    def _on_init(self, record: dict) -> Event:
        session = self.builder.session
        session.id = session.id or str(record.get("session_id") or "")
        self.builder.note_model(record.get("model"))
        return Event(kind=Kind.SYSTEM, id="", subtype="init", text=f"model {record.get('model')}")

    def _on_message(self, record: dict) -> Event | None:
        text = as_text(record.get("content"))
        if record.get("role") == "user":
            self.last_delta = None
            return Event(kind=Kind.USER, id="", text=text)
        if record.get("delta") and self.last_delta is not None:
            self.last_delta.text += text
            return None
        event = Event(kind=Kind.ASSISTANT, id="", text=text)
        self.last_delta = event if record.get("delta") else None
        return event

    def _on_tool_use(self, record: dict) -> Event:
        self.last_delta = None
        arguments = record.get("parameters")
        return tool_call_event(record.get("tool_name"), record.get("tool_id"), arguments)

    def _on_tool_result(self, record: dict) -> Event:
        self.last_delta = None
        error = record.get("error") if isinstance(record.get("error"), dict) else {}
        text = as_text(record.get("output")) or as_text(error.get("message"))
        event = Event(kind=Kind.TOOL_RESULT, id="", call_id=record.get("tool_id"), text=text)
        event.is_error = record.get("status") == "error" or bool(error)
        return event

    def _on_error(self, record: dict) -> Event:
        event = Event(kind=Kind.SYSTEM, id="", subtype="error", text=as_text(record.get("message")))
        event.is_error = record.get("severity") != "warning"
        return event

    def _on_result(self, record: dict) -> Event:
        stats = record.get("stats") if isinstance(record.get("stats"), dict) else {}
        session = self.builder.session
        if isinstance(stats.get("duration_ms"), int):
            session.duration_ms = stats["duration_ms"]
        usage = gemini_usage(
            {**stats, "input": stats.get("input_tokens"), "output": stats.get("output_tokens")}
        )
        session.reported_usage = usage if stats else None
        self.builder.note_cli_figure("result.stats", record.get("stats"))
        event = Event(kind=Kind.SYSTEM, id="", subtype="result", text=as_text(record.get("status")))
        event.is_error = record.get("status") == "error"
        return event


def tool_call_event(name: Any, call_id: Any, arguments: Any) -> Event:
    path = None
    if isinstance(arguments, dict):
        path = arguments.get("file_path") or arguments.get("absolute_path") or arguments.get("path")
    call = Event(
        kind=Kind.TOOL_CALL, id="", tool_name=as_text(name), call_id=call_id, arguments=arguments
    )
    call.file_path = path if isinstance(path, str) else None
    return call


def parse_stream(paths: list[Path]) -> Session:
    reader = StreamReader(Session(id="", harness=HARNESS, format=STREAM_FORMAT))
    return feed_files(reader.builder, paths, reader.feed)
