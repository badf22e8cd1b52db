"""``cursor-agent -p --output-format stream-json``: one line per complete message or tool event.

Tool events name their tool by the single key of ``tool_call`` (``readToolCall``,
``shellToolCall``, ``editToolCall``...); ``started`` gives the arguments, ``completed`` repeats
them with a ``result`` of ``success``, ``error``/``failure`` or ``rejected``.
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
    iso_from_ms,
    raw_event,
    text_diff,
)

FORMAT = "cursor-stream-json"
HARNESS = "cursor"
_RESULT_TEXT_KEYS = ("stdout", "content", "markdown", "message", "output", "summary")


def looks_like(record: dict) -> bool:
    if record.get("type") == "system" and record.get("subtype") == "init":
        return "apiKeySource" in record and "claude_code_version" not in record
    return record.get("type") == "tool_call" and isinstance(record.get("tool_call"), dict)


class CursorReader:
    def __init__(self, session: Session):
        self.builder = SessionBuilder(session)
        self.thinking: list[str] = []
        self.thinking_since: str | None = None

    @property
    def session(self) -> Session:
        return self.builder.session

    def feed(self, record: dict) -> None:
        kind = str(record.get("type"))
        self.builder.count(kind)
        timestamp = iso_from_ms(record.get("timestamp_ms"))
        self.builder.note_time(timestamp)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            self.builder.add(raw_event(record, timestamp))
        else:
            handler(record, timestamp)

    def _on_system(self, record: dict, timestamp: str | None) -> None:
        self.session.id = self.session.id or str(record.get("session_id") or "")
        self.session.cwd = self.session.cwd or record.get("cwd")
        self.builder.note_model(record.get("model"))
        text = f"model {record.get('model')}, permissions {record.get('permissionMode')}"
        self.builder.add(
            Event(kind=Kind.SYSTEM, id="", timestamp=timestamp, subtype="init", text=text)
        )

    def _on_user(self, record: dict, timestamp: str | None) -> None:
        for text in _message_texts(record):
            self.builder.add(Event(kind=Kind.USER, id="", timestamp=timestamp, text=text))

    def _on_thinking(self, record: dict, timestamp: str | None) -> None:
        if record.get("subtype") != "completed":
            self.thinking.append(as_text(record.get("text")))
            self.thinking_since = self.thinking_since or timestamp
            return
        text = "".join(self.thinking)
        event = Event(
            kind=Kind.REASONING, id="", timestamp=self.thinking_since or timestamp, text=text
        )
        event.encrypted = not text
        self.thinking, self.thinking_since = [], None
        self.builder.add(event)

    def _on_assistant(self, record: dict, timestamp: str | None) -> None:
        for text in _message_texts(record):
            event = Event(kind=Kind.ASSISTANT, id="", timestamp=timestamp, text=text)
            event.api_call_id = record.get("model_call_id")
            self.builder.add(event)

    def _on_tool_call(self, record: dict, timestamp: str | None) -> None:
        name, body = _tool(record.get("tool_call"))
        call_id = str(record.get("call_id") or "")
        call = self.builder.call_for(call_id)
        if call is None:
            call = Event(
                kind=Kind.TOOL_CALL, id="", timestamp=timestamp, tool_name=name, call_id=call_id
            )
            call.api_call_id = record.get("model_call_id")
            self.builder.add(call)
        call.arguments = body.get("args")
        call.file_path = _path(call.arguments)
        if record.get("subtype") == "completed":
            self._result(call, body.get("result"), timestamp)

    def _result(self, call: Event, result: Any, timestamp: str | None) -> None:
        result = result if isinstance(result, dict) else {}
        success = result.get("success")
        outcome = success if isinstance(success, dict) else _failure(result)
        event = Event(kind=Kind.TOOL_RESULT, id="", timestamp=timestamp, call_id=call.call_id)
        event.is_error = not isinstance(success, dict)
        event.text = _result_text(outcome)
        if isinstance(outcome.get("exitCode"), int):
            event.exit_code = outcome["exitCode"]
            event.is_error = event.is_error or event.exit_code != 0
        if isinstance(outcome.get("executionTime"), int):
            event.duration_ms = outcome["executionTime"]
        call.diff = _edit_diff(call, outcome) or call.diff
        self.builder.add(event)

    def _on_result(self, record: dict, timestamp: str | None) -> None:
        text = as_text(record.get("result") or record.get("subtype"))
        event = Event(kind=Kind.SYSTEM, id="", timestamp=timestamp, subtype="result", text=text)
        event.is_error = bool(record.get("is_error"))
        self.builder.add(event)
        if isinstance(record.get("duration_ms"), int):
            self.session.duration_ms = (self.session.duration_ms or 0) + record["duration_ms"]
        usage = record.get("usage")
        self.builder.note_cli_figure("result.usage", usage)
        self.builder.note_cli_figure("result.duration_ms", record.get("duration_ms"))
        if isinstance(usage, dict):
            self.session.reported_usage = self.session.reported_usage or Usage()
            self.session.reported_usage.add(_cursor_usage(usage))


def _message_texts(record: dict) -> list[str]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    parts = content if isinstance(content, list) else []
    return [
        as_text(p.get("text")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
    ]


def _tool(tool_call: Any) -> tuple[str, dict]:
    if not isinstance(tool_call, dict) or not tool_call:
        return "unknown", {}
    key = next(iter(tool_call))
    body = tool_call[key] if isinstance(tool_call[key], dict) else {}
    return key.removesuffix("ToolCall") or key, body


def _path(arguments: Any) -> str | None:
    if isinstance(arguments, dict) and isinstance(arguments.get("path"), str):
        return arguments["path"]
    return None


def _failure(result: dict) -> dict:
    for key in ("error", "failure", "rejected"):
        if isinstance(result.get(key), dict):
            return result[key]
    return {}


def _result_text(outcome: dict) -> str:
    texts = [as_text(outcome[key]) for key in _RESULT_TEXT_KEYS if outcome.get(key)]
    if outcome.get("stderr"):
        texts.append(as_text(outcome["stderr"]))
    if outcome.get("reason"):
        texts.append(as_text(outcome["reason"]))
    return "\n".join(texts)


def _edit_diff(call: Event, outcome: dict) -> str | None:
    if isinstance(outcome.get("diffString"), str):
        return outcome["diffString"]
    after = outcome.get("afterFullFileContent")
    if call.file_path and isinstance(after, str):
        return text_diff(call.file_path, outcome.get("beforeFullFileContent"), after)
    return None


def _cursor_usage(usage: dict) -> Usage:
    return Usage(
        input=as_int(usage.get("inputTokens")),
        output=as_int(usage.get("outputTokens")),
        cache_read=as_int(usage.get("cacheReadTokens")),
        cache_write=as_int(usage.get("cacheWriteTokens")),
    )


def parse(paths: list[Path]) -> Session:
    reader = CursorReader(Session(id="", harness=HARNESS, format=FORMAT))
    return feed_files(reader.builder, paths, reader.feed)
