"""Gemini CLI's saved chats and its ``--output-format json`` result object.

A chat is ``{sessionId, startTime, messages}`` (message types user, gemini, info, error): one
JSON document as the CLI saved it before, or (0.61) JSON lines that Gemini CLI folds into that
document when it reloads a session, and so do we (``fold_chat_lines``).

A ``gemini`` message is one API call: its thoughts, text and tool calls (each with its result)
become events, and its ``tokens`` sit on the first of them. A user message that only carries
function responses repeats those results and adds no event.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from transcripts.model import Event, Kind, Session, Usage
from transcripts.parsers.common import (
    SessionBuilder,
    TranscriptError,
    as_text,
    decode_json,
    raw_event,
    read_lines,
)
from transcripts.parsers.gemini import (
    DOCUMENT_FORMAT,
    HARNESS,
    gemini_usage,
    tool_call_event,
)

SHELL_EXIT = re.compile(r"^Exit Code: (\d+)$", re.MULTILINE)


def read_chat(builder: SessionBuilder, chat: dict) -> None:
    session = builder.session
    session.id = str(chat.get("sessionId") or session.id)
    builder.note_time(chat.get("startTime"))
    for message in chat.get("messages") or []:
        if not isinstance(message, dict):
            builder.add(raw_event(message))
            continue
        kind = str(message.get("type"))
        if kind == "user" and _only_function_responses(message.get("content")):
            builder.count("function_response")
            continue
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


def _only_function_responses(content: Any) -> bool:
    parts = content if isinstance(content, list) else []
    return bool(parts) and all(isinstance(p, dict) and "functionResponse" in p for p in parts)


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
    event.diff = _file_diff(call.get("resultDisplay"))
    result = Event(
        kind=Kind.TOOL_RESULT, id="", call_id=call.get("id"), timestamp=call.get("timestamp")
    )
    result.text = _result_text(call)
    # a shell command that failed is still a "success" of the tool: its output ends with the code
    exit_code = SHELL_EXIT.search(result.text) if call.get("name") == "run_shell_command" else None
    result.exit_code = int(exit_code.group(1)) if exit_code else None
    result.is_error = call.get("status") in ("error", "cancelled") or bool(result.exit_code)
    return [event, result]


def _file_diff(display: Any) -> str | None:
    """The unified diff Gemini CLI keeps for a file it wrote or edited (``fileDiff``), from its
    ``---`` line on (the ``Index:`` and ``====`` lines before it are not part of the diff)."""
    diff = display.get("fileDiff") if isinstance(display, dict) else None
    if not isinstance(diff, str) or "\n--- " not in f"\n{diff}":
        return None
    lines = diff.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("--- "))
    return "\n".join(lines[start:]) + "\n"


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
    session = Session(id=paths[0].stem, harness=HARNESS, format=DOCUMENT_FORMAT)
    builder = SessionBuilder(session)
    try:
        document = decode_json(paths[0].read_bytes())
    except ValueError as error:
        document = fold_chat_lines(builder, paths[0])
        if not document:
            raise TranscriptError(f"{paths[0].name}: not valid JSON ({error})") from error
    if "sessionId" in document or "messages" in document:
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


def fold_chat_lines(builder: SessionBuilder, path: Path) -> dict:
    """The chat a JSON-lines log holds, as Gemini CLI reloads it: the header and each ``$set``
    update its metadata (``messages`` there replaces the list), a message line adds the message
    or replaces the one with its id in place (a model message comes again with its tool calls),
    and ``$rewindTo`` drops that message and all after it. Empty when no line is a chat's."""
    chat: dict[str, Any] = {}
    messages: dict[str, dict] = {}
    for line in read_lines(path):
        record = line.record
        if not isinstance(record, dict):
            problem = line.problem or "a JSON value that is not an object"
            builder.warn(f"{path.name}:{line.number}: {problem}, skipped")
        elif isinstance(record.get("$rewindTo"), str):
            ids = list(messages)
            cut = ids.index(record["$rewindTo"]) if record["$rewindTo"] in ids else 0
            messages = {key: messages[key] for key in ids[:cut]}
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
        elif isinstance(record.get("$set"), dict) or "sessionId" in record:
            update = record.get("$set", record)
            if isinstance(update.get("messages"), list):
                listed = [m for m in update["messages"] if isinstance(m, dict)]
                messages = {str(m.get("id", index)): m for index, m in enumerate(listed)}
            chat |= update
    return chat | {"messages": list(messages.values())} if chat or messages else {}
