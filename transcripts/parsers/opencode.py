"""``opencode run --format json``: ``{type, timestamp (epoch ms), sessionID, part}`` lines.

A step (``step_start`` .. ``step_finish``) is one API call; ``step_finish.part.tokens`` gives its
usage. opencode counts ``reasoning`` outside ``output``; our ``Usage.output`` includes it. A
``tool_use`` line holds the call and its finished state (input, output, error, times) together;
a shell command that exits non-zero is a ``completed`` call whose ``metadata.exit`` says so
(opencode 1.18), and is marked an error here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transcripts.model import Event, Kind, Session, Usage
from transcripts.parsers.common import (
    SessionBuilder,
    as_int,
    as_text,
    edit_diff,
    feed_files,
    iso_from_ms,
    raw_event,
)

FORMAT = "opencode-json"
HARNESS = "opencode"


def looks_like(record: dict) -> bool:
    return "sessionID" in record and isinstance(record.get("part"), dict)


class OpencodeReader:
    def __init__(self, session: Session):
        self.builder = SessionBuilder(session)
        self.step_start = 0
        self.step_id: str | None = None

    @property
    def session(self) -> Session:
        return self.builder.session

    def feed(self, record: dict) -> None:
        kind = str(record.get("type"))
        self.builder.count(kind)
        timestamp = iso_from_ms(record.get("timestamp"))
        self.builder.note_time(timestamp)
        self.session.id = self.session.id or str(record.get("sessionID") or "")
        part = record.get("part") if isinstance(record.get("part"), dict) else {}
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            self.builder.add(raw_event(record, timestamp))
            return
        for event in handler(part, record):
            event.timestamp = event.timestamp or timestamp
            event.api_call_id = self.step_id
            self.builder.add(event)

    def _on_step_start(self, part: dict, record: dict) -> list[Event]:
        self.step_start = len(self.session.events)
        self.step_id = str(part.get("messageID") or part.get("id") or "")
        return []

    def _on_text(self, part: dict, record: dict) -> list[Event]:
        return [Event(kind=Kind.ASSISTANT, id="", text=as_text(part.get("text")))]

    def _on_reasoning(self, part: dict, record: dict) -> list[Event]:
        text = as_text(part.get("text"))
        return [Event(kind=Kind.REASONING, id="", text=text, encrypted=not text)]

    def _on_tool_use(self, part: dict, record: dict) -> list[Event]:
        state = part.get("state") if isinstance(part.get("state"), dict) else {}
        arguments = state.get("input")
        call = Event(kind=Kind.TOOL_CALL, id="", tool_name=as_text(part.get("tool")))
        call.call_id, call.arguments = part.get("callID"), arguments
        call.file_path = _path(arguments)
        call.diff = _diff(call.file_path, arguments, state.get("metadata"))
        times = state.get("time") if isinstance(state.get("time"), dict) else {}
        call.timestamp = iso_from_ms(times.get("start"))
        result = Event(kind=Kind.TOOL_RESULT, id="", call_id=call.call_id)
        result.timestamp = iso_from_ms(times.get("end"))
        metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
        result.exit_code = metadata.get("exit") if isinstance(metadata.get("exit"), int) else None
        result.is_error = state.get("status") == "error" or bool(result.exit_code)
        result.text = as_text(state.get("output") if "output" in state else state.get("error"))
        if isinstance(times.get("start"), int) and isinstance(times.get("end"), int):
            result.duration_ms = times["end"] - times["start"]
        return [call, result]

    def _on_step_finish(self, part: dict, record: dict) -> list[Event]:
        if isinstance(part.get("cost"), int | float):
            self.session.cost_usd = (self.session.cost_usd or 0) + part["cost"]
        usage = _usage(part.get("tokens"))
        if usage is None:
            return []
        events = self.session.events[self.step_start :]
        if not events:
            events = [self.builder.add(Event(kind=Kind.SYSTEM, id="", subtype="usage"))]
        api_call_id = self.step_id or f"step-{len(self.builder.api_calls) + 1}"
        for event in events:
            event.api_call_id = api_call_id
        self.builder.set_api_usage(api_call_id, events[0], usage)
        self.step_start, self.step_id = len(self.session.events), None
        return []

    def _on_error(self, part: dict, record: dict) -> list[Event]:
        error = record.get("error") if isinstance(record.get("error"), dict) else {}
        data = error.get("data") if isinstance(error.get("data"), dict) else {}
        text = as_text(data.get("message") or error.get("name") or "error")
        return [Event(kind=Kind.SYSTEM, id="", subtype="api_error", text=text, is_error=True)]


def _path(arguments: Any) -> str | None:
    if not isinstance(arguments, dict):
        return None
    path = arguments.get("filePath") or arguments.get("path")
    return path if isinstance(path, str) else None


def _diff(path: str | None, arguments: Any, metadata: Any) -> str | None:
    if isinstance(metadata, dict) and isinstance(metadata.get("diff"), str):
        return metadata["diff"]
    return edit_diff(path, arguments, "oldString", "newString")


def _usage(tokens: Any) -> Usage | None:
    if not isinstance(tokens, dict):
        return None
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    reasoning = as_int(tokens.get("reasoning"))
    return Usage(
        input=as_int(tokens.get("input")),
        output=as_int(tokens.get("output")) + reasoning,
        cache_read=as_int(cache.get("read")),
        cache_write=as_int(cache.get("write")),
        reasoning=reasoning,
    )


def parse(paths: list[Path]) -> Session:
    reader = OpencodeReader(Session(id="", harness=HARNESS, format=FORMAT))
    return feed_files(reader.builder, paths, reader.feed)
