"""``codex exec --json``: thread/turn/item events without timestamps; usage per turn.

Each item becomes events keyed by its ``item_N`` id: tool-like items (commands, file changes,
MCP calls, web searches, to-do lists) give a tool call when first seen and a result when
completed. ``file_change`` items carry only path and kind; diffs need the rollout file.
"""

from __future__ import annotations

from pathlib import Path

from transcripts.model import Event, Kind, Session
from transcripts.parsers.codex_usage import codex_usage
from transcripts.parsers.common import (
    SessionBuilder,
    as_text,
    feed_files,
    raw_event,
)

FORMAT = "codex-exec-json"
HARNESS = "codex"
_PREFIXES = ("thread.", "turn.", "item.")
_TOOL_ITEMS = {
    "command_execution": "shell",
    "file_change": "file_change",
    "mcp_tool_call": "mcp_tool_call",
    "web_search": "web_search",
    "todo_list": "todo_list",
    "collab_tool_call": "collab_tool_call",
}


def looks_like(record: dict) -> bool:
    kind = record.get("type")
    return isinstance(kind, str) and kind.startswith(_PREFIXES) and "payload" not in record


class ExecReader:
    def __init__(self, session: Session):
        self.builder = SessionBuilder(session)
        self.turn = 0
        self.turn_start = 0  # index of the current turn's first event

    def feed(self, record: dict) -> None:
        kind = str(record.get("type"))
        self.builder.count(kind)
        self.builder.note_time(record.get("timestamp"))
        if kind == "thread.started":
            self.builder.session.id = str(record.get("thread_id") or "")
        elif kind == "turn.started":
            self.turn += 1
            self.turn_start = len(self.builder.session.events)
            self.builder.calls.clear()  # item ids may restart in a resumed thread
        elif kind == "turn.completed":
            self._turn_usage(record.get("usage"))
        elif kind in ("turn.failed", "error"):
            error = record.get("error")
            message = error.get("message") if isinstance(error, dict) else record.get("message")
            self._system("api_error" if kind == "turn.failed" else "error", message, True)
        elif kind.startswith("item.") and isinstance(record.get("item"), dict):
            self._item(record["item"], completed=kind == "item.completed")
        else:
            self.builder.add(raw_event(record))

    def _turn_usage(self, figures) -> None:
        usage = codex_usage(figures)
        if usage is None:
            return
        api_call_id = f"turn-{self.turn}"
        events = self.builder.session.events[self.turn_start :]
        holder = self.builder.usage_holder(events, api_call_id)
        self.builder.set_api_usage(api_call_id, holder, usage)
        self.builder.note_cli_figure(f"turn.completed usage (turn {self.turn})", figures)

    def _system(self, subtype: str, text, is_error: bool) -> Event:
        event = Event(kind=Kind.SYSTEM, id="", subtype=subtype, text=as_text(text))
        event.is_error = is_error
        return self.builder.add(event)

    def _item(self, item: dict, completed: bool) -> None:
        item_type, item_id = item.get("type"), str(item.get("id") or "")
        if item_type in _TOOL_ITEMS:
            self._tool_item(item, item_id, completed)
        elif not completed:
            return
        elif item_type == "agent_message":
            self.builder.add(Event(kind=Kind.ASSISTANT, id="", text=as_text(item.get("text"))))
        elif item_type == "reasoning":
            self.builder.add(Event(kind=Kind.REASONING, id="", text=as_text(item.get("text"))))
        elif item_type == "error":
            self._system("error", item.get("message"), True)
        else:
            self.builder.add(raw_event(item))

    def _tool_item(self, item: dict, item_id: str, completed: bool) -> None:
        call = self.builder.call_for(item_id)
        if call is None:
            call = self.builder.add(_call_for_item(item, item_id))
        else:
            call.arguments = _arguments(item)
        if completed and item.get("type") != "web_search":
            self.builder.add(_result_for_item(item, item_id))


def _call_for_item(item: dict, item_id: str) -> Event:
    item_type = item.get("type")
    name = _TOOL_ITEMS[item_type]
    if item_type == "mcp_tool_call":
        name = f"{item.get('server')}.{item.get('tool')}"
    elif item_type == "collab_tool_call":
        name = str(item.get("tool") or name)
    changes = item.get("changes") if isinstance(item.get("changes"), list) else []
    paths = [c.get("path") for c in changes if isinstance(c, dict)]
    return Event(
        kind=Kind.TOOL_CALL,
        id="",
        tool_name=name,
        call_id=item_id,
        arguments=_arguments(item),
        file_path=paths[0] if paths else None,
    )


def _arguments(item: dict) -> dict:
    skipped = ("id", "type", "status", "aggregated_output", "exit_code", "result", "error")
    return {key: value for key, value in item.items() if key not in skipped}


def _result_for_item(item: dict, item_id: str) -> Event:
    exit_code = item.get("exit_code") if isinstance(item.get("exit_code"), int) else None
    failed = (
        item.get("status") in ("failed", "declined") or bool(exit_code) or bool(item.get("error"))
    )
    return Event(
        kind=Kind.TOOL_RESULT,
        id="",
        call_id=item_id,
        text=_result_text(item),
        is_error=failed,
        exit_code=exit_code,
    )


def _result_text(item: dict) -> str:
    if item.get("type") == "command_execution":
        return as_text(item.get("aggregated_output"))
    if item.get("type") == "file_change":
        changes = item.get("changes") if isinstance(item.get("changes"), list) else []
        return "\n".join(f"{c.get('kind')} {c.get('path')}" for c in changes if isinstance(c, dict))
    error = item.get("error")
    if isinstance(error, dict):
        return as_text(error.get("message"))
    result = item.get("result")
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        return "\n".join(
            as_text(b.get("text", b)) for b in result["content"] if isinstance(b, dict)
        )
    return as_text(result) if result is not None else as_text(item.get("status"))


def parse(paths: list[Path]) -> Session:
    reader = ExecReader(Session(id="", harness=HARNESS, format=FORMAT))
    return feed_files(reader.builder, paths, reader.feed)
