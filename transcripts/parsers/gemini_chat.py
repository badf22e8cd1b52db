"""Gemini CLI files that are one JSON document: saved chats (``{sessionId, startTime, messages}``,
message types user, gemini, info, error) and the ``--output-format json`` result object.

A ``gemini`` message is one API call: its thoughts, text and tool calls (each with its result)
become events, and its ``tokens`` sit on the first of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transcripts.model import Event, Kind, Session, Usage
from transcripts.parsers.common import (
    SessionBuilder,
    TranscriptError,
    as_text,
    decode_json,
    raw_event,
)
from transcripts.parsers.gemini import (
    DOCUMENT_FORMAT,
    HARNESS,
    gemini_usage,
    tool_call_event,
)


def read_chat(builder: SessionBuilder, chat: dict) -> None:
    session = builder.session
    session.id = str(chat.get("sessionId") or session.id)
    builder.note_time(chat.get("startTime"))
    for message in chat["messages"]:
        if not isinstance(message, dict):
            builder.add(raw_event(message))
            continue
        kind = str(message.get("type"))
        builder.count(kind)
        builder.note_time(message.get("timestamp"))
        events = _message_events(message, kind)
        for event in events:
            event.timestamp = event.timestamp or message.get("timestamp")
            builder.add(event)
        if kind == "gemini" and events:
            builder.note_model(message.get("model"))
            _note_usage(builder, message, events)
    if chat.get("lastUpdated"):
        session.ended_at = chat["lastUpdated"]


def _message_events(message: dict, kind: str) -> list[Event]:
    text = _content_text(message.get("content"))
    if kind == "user":
        return [Event(kind=Kind.USER, id="", text=text)]
    if kind in ("info", "error", "warning"):
        return [Event(kind=Kind.SYSTEM, id="", subtype=kind, text=text, is_error=kind == "error")]
    if kind != "gemini":
        return [raw_event(message)]
    events = [_thought(t) for t in message.get("thoughts") or [] if isinstance(t, dict)]
    if text:
        events.append(Event(kind=Kind.ASSISTANT, id="", text=text))
    for call in message.get("toolCalls") or []:
        if isinstance(call, dict):
            events += _tool_events(call)
    return events


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(as_text(part.get("text")) for part in content if isinstance(part, dict))
    return as_text(content)


def _thought(thought: dict) -> Event:
    subject, description = as_text(thought.get("subject")), as_text(thought.get("description"))
    text = f"**{subject}**\n{description}" if subject else description
    return Event(kind=Kind.REASONING, id="", timestamp=thought.get("timestamp"), text=text)


def _tool_events(call: dict) -> list[Event]:
    event = tool_call_event(call.get("name"), call.get("id"), call.get("args"))
    event.timestamp = call.get("timestamp")
    result = Event(
        kind=Kind.TOOL_RESULT, id="", call_id=call.get("id"), timestamp=call.get("timestamp")
    )
    result.text = _result_text(call)
    result.is_error = call.get("status") in ("error", "cancelled")
    return [event, result]


def _result_text(call: dict) -> str:
    parts = []
    for item in call.get("result") or []:
        response = item.get("functionResponse") if isinstance(item, dict) else None
        payload = response.get("response") if isinstance(response, dict) else None
        if isinstance(payload, dict):
            parts.append(as_text(payload.get("output", payload.get("error", payload))))
    return "\n".join(parts) or as_text(call.get("resultDisplay"))


def _note_usage(builder: SessionBuilder, message: dict, events: list[Event]) -> None:
    usage = gemini_usage(message.get("tokens"))
    api_call_id = str(message.get("id") or len(builder.api_calls))
    for event in events:
        event.api_call_id = api_call_id
    if usage is not None:
        builder.set_api_usage(api_call_id, events[0], usage)


def parse_document(paths: list[Path]) -> Session:
    try:
        document = decode_json(paths[0].read_bytes())
    except ValueError as error:
        raise TranscriptError(f"{paths[0].name}: not valid JSON ({error})") from error
    session = Session(id=paths[0].stem, harness=HARNESS, format=DOCUMENT_FORMAT)
    builder = SessionBuilder(session)
    if isinstance(document.get("messages"), list):
        read_chat(builder, document)
    else:
        _read_output(builder, document)
    for path in paths[1:]:
        builder.warn(f"{path}: a second Gemini file, ignored")
    return session


def _read_output(builder: SessionBuilder, document: dict) -> None:
    session = builder.session
    session.id = str(document.get("session_id") or session.id)
    builder.count("response")
    builder.add(Event(kind=Kind.ASSISTANT, id="", text=as_text(document.get("response"))))
    error = document.get("error")
    if isinstance(error, dict):
        text = as_text(error.get("message"))
        builder.add(Event(kind=Kind.SYSTEM, id="", subtype="error", text=text, is_error=True))
    builder.note_cli_figure("stats", document["stats"])
    models = document["stats"].get("models")
    for model, figures in (models if isinstance(models, dict) else {}).items():
        builder.note_model(model)
        usage = gemini_usage(figures.get("tokens") if isinstance(figures, dict) else None)
        if usage is not None:
            session.reported_usage = session.reported_usage or Usage()
            session.reported_usage.add(usage)
