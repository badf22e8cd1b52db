"""Codex rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``).

``response_item`` records are the canonical stream; ``event_msg`` records enrich it (exit codes,
durations, diffs, per-call token counts) or duplicate it (user and agent messages, skipped).
Each ``token_count`` closes one API call: its ``last_token_usage`` goes on the first event since
the previous one. Spawned agents are separate rollouts linked back to their spawning call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from transcripts.model import Event, Kind, Session
from transcripts.parsers.codex_patch import apply_patch_diff, changes_diff
from transcripts.parsers.codex_usage import codex_usage
from transcripts.parsers.common import (
    SessionBuilder,
    as_id,
    as_int,
    as_text,
    attach_subagents,
    feed_lines,
    json_or_text,
    raw_event,
    short_path,
)

FORMAT = "codex-rollout"
HARNESS = "codex"
ROLLOUT_TYPES = frozenset(
    {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
)
_ROLES = ("user", "assistant", "developer", "system")
_EXIT_LINE = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)$", re.MULTILINE)
_RUNNING_LINE = re.compile(r"^Process running with session ID \d+$", re.MULTILINE)
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions")
_QUIET_EVENTS = frozenset(
    {
        "user_message",
        "agent_message",
        "task_started",
        "task_complete",
        "exec_command_begin",
        "exec_command_output_delta",
        "patch_apply_begin",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "web_search_begin",
        "web_search_end",
        "turn_diff",
        "collab_agent_spawn_begin",
        "agent_reasoning_section_break",
        "agent_reasoning_raw_content",
    }
)


def looks_like(record: dict) -> bool:
    if "payload" in record:
        return record.get("type") in ROLLOUT_TYPES
    kind, content = record.get("type"), record.get("content")
    if kind == "message" and isinstance(content, list) and record.get("role") in _ROLES:
        return True  # early rollouts wrote response items without the envelope
    return kind in ("function_call", "function_call_output") and "call_id" in record


def _legacy_envelope(record: dict) -> dict:
    """Early rollouts: a bare ``{id, timestamp, instructions}`` line, then bare response items."""
    if "type" not in record and "id" in record:
        return {"type": "session_meta", "timestamp": record.get("timestamp"), "payload": record}
    if record.get("record_type") == "state":
        return {"type": "state", "payload": {}}
    return {"type": "response_item", "timestamp": record.get("timestamp"), "payload": record}


class RolloutReader:
    def __init__(self, session: Session):
        self.builder = SessionBuilder(session)
        self.parent_id: str | None = None
        self.spawned: dict[str, str] = {}  # spawn call id -> child thread id
        self.replaying = False  # inside a forked child's copy of its parent's history
        self.turn_id: str | None = None
        self.call_start = 0  # index of the first event of the current API call
        self.api_calls = 0
        self.last_total: Any = None
        self.reasoning_text: list[str] = []
        self.exec_ends: dict[str, dict] = {}
        self.patch_ends: dict[str, dict] = {}

    @property
    def session(self) -> Session:
        return self.builder.session

    def feed(self, record: dict) -> None:
        if "payload" not in record:
            record = _legacy_envelope(record)
        kind = str(record.get("type"))
        self.builder.count(kind)
        payload = record.get("payload")
        if kind == "session_meta" and isinstance(payload, dict):
            self._meta(payload, record.get("timestamp"))
            return
        if kind == "turn_context" and isinstance(payload, dict):
            self.replaying = self.replaying and _parent_turn(payload, self.session.id)
            if not self.replaying:
                self._turn_context(payload)
            return
        if self.replaying:
            return
        self.builder.note_time(record.get("timestamp"))
        handler = {
            "response_item": self._item,
            "event_msg": self._event,
            "compacted": self._compacted,
        }
        if kind in handler and isinstance(payload, dict):
            handler[kind](payload, record.get("timestamp"))
        elif kind == "state":
            return
        else:
            self.builder.add(raw_event(record, record.get("timestamp")))

    def _meta(self, meta: dict, timestamp: str | None) -> None:
        session = self.session
        if session.id and meta.get("id") != session.id:
            self.replaying = bool(self.parent_id)  # the parent's history follows; skip it
            return
        session.id = as_id(meta.get("id")) or session.id
        session.cwd = meta.get("cwd") or session.cwd
        session.cli_version = meta.get("cli_version") or session.cli_version
        self.builder.note_time(meta.get("timestamp") or timestamp)
        spawn = _thread_spawn(meta.get("source"))
        self.parent_id = as_id(spawn.get("parent_thread_id")) or as_id(meta.get("forked_from_id"))
        session.agent_type = spawn.get("agent_role") or meta.get("agent_role")
        session.description = spawn.get("agent_nickname") or meta.get("agent_nickname")

    def _turn_context(self, context: dict) -> None:
        self.turn_id = context.get("turn_id") or self.turn_id
        self.builder.note_model(context.get("model"))
        self.session.cwd = self.session.cwd or context.get("cwd")

    def _item(self, item: dict, timestamp: str | None) -> None:
        event = _ITEMS.get(item.get("type"), _raw_item)(self, item)
        if event is not None:
            event.timestamp = timestamp
            self.builder.add(event)

    def _message(self, item: dict) -> Event:
        text = "\n".join(_content_texts(item.get("content")))
        role = item.get("role")
        if role == "assistant":
            return Event(kind=Kind.ASSISTANT, id="", text=text)
        if role == "user" and not text.lstrip().startswith(_CONTEXT_PREFIXES):
            return Event(kind=Kind.USER, id="", text=text)
        return Event(kind=Kind.SYSTEM, id="", subtype="context", text=text)

    def _reasoning(self, item: dict) -> Event:
        summary = _content_texts(item.get("summary")) + _content_texts(item.get("content"))
        text = "\n\n".join(summary) or "\n\n".join(self.reasoning_text)
        self.reasoning_text = []
        encrypted = bool(item.get("encrypted_content")) and not item.get("content")
        return Event(kind=Kind.REASONING, id="", text=text, encrypted=encrypted)

    def _function_call(self, item: dict) -> Event:
        arguments = json_or_text(item.get("arguments", item.get("input")))
        call = Event(
            kind=Kind.TOOL_CALL,
            id="",
            tool_name=item.get("name"),
            call_id=item.get("call_id"),
            arguments=arguments,
        )
        diff, path = apply_patch_diff(_patch_text(arguments))
        call.diff, call.file_path = diff, path or _argument_path(arguments)
        return call

    def _local_shell(self, item: dict) -> Event:
        call_id = item.get("call_id") or item.get("id")
        arguments = item.get("action")
        return Event(
            kind=Kind.TOOL_CALL,
            id="",
            tool_name="local_shell",
            call_id=call_id,
            arguments=arguments,
        )

    def _web_search(self, item: dict) -> Event:
        return Event(
            kind=Kind.TOOL_CALL, id="", tool_name="web_search", arguments=item.get("action")
        )

    def _output(self, item: dict) -> Event:
        output = item.get("output")
        if isinstance(output, list):
            output = "\n".join(_content_texts(output))
        text, metadata = _split_output(as_text(output))
        result = Event(kind=Kind.TOOL_RESULT, id="", call_id=item.get("call_id"), text=text)
        exit_code = metadata.get("exit_code", _stated_exit_code(text))
        if isinstance(exit_code, int):
            result.exit_code, result.is_error = exit_code, exit_code != 0
        if isinstance(metadata.get("duration_seconds"), int | float):
            result.duration_ms = round(metadata["duration_seconds"] * 1000)
        return result

    def _event(self, event: dict, timestamp: str | None) -> None:
        kind = event.get("type")
        if kind == "token_count":
            self._token_count(event.get("info"))
        elif kind == "agent_reasoning":
            self.reasoning_text.append(as_text(event.get("text")))
        elif kind == "exec_command_end" and event.get("call_id"):
            self.exec_ends[event["call_id"]] = event
        elif kind == "patch_apply_end" and event.get("call_id"):
            self.patch_ends[event["call_id"]] = event
        elif kind == "collab_agent_spawn_end" and event.get("new_thread_id"):
            self.spawned[str(event.get("call_id"))] = str(event["new_thread_id"])
        elif kind in ("context_compacted", "turn_aborted", "error", "stream_error", "warning"):
            self._notice(kind, event, timestamp)
        elif kind not in _QUIET_EVENTS:
            self.builder.add(raw_event(event, timestamp))

    def _notice(self, kind: str, event: dict, timestamp: str | None) -> None:
        subtype = {"context_compacted": "compaction", "stream_error": "api_error"}.get(kind, kind)
        text = event.get("message") or event.get("reason") or kind.replace("_", " ")
        notice = Event(
            kind=Kind.SYSTEM, id="", timestamp=timestamp, subtype=subtype, text=as_text(text)
        )
        notice.is_error = kind in ("error", "stream_error")
        self.builder.add(notice)

    def _compacted(self, payload: dict, timestamp: str | None) -> None:
        text = as_text(payload.get("message")) or "conversation compacted"
        self.builder.add(
            Event(kind=Kind.SYSTEM, id="", timestamp=timestamp, subtype="compaction", text=text)
        )

    def _token_count(self, info: Any) -> None:
        if not isinstance(info, dict):
            return
        total = info.get("total_token_usage")
        usage = codex_usage(info.get("last_token_usage"))
        if usage is None or (total is not None and total == self.last_total):
            return  # a repeat of the last figures (rate-limit refreshes repeat them)
        self.last_total = total
        self.api_calls += 1
        api_call_id = f"{self.turn_id or 'turn'}#{self.api_calls}"
        holder = self.builder.usage_holder(self.session.events[self.call_start :], api_call_id)
        self.builder.set_api_usage(api_call_id, holder, usage)
        self.call_start = len(self.session.events)

    def finish(self) -> Session:
        """Apply the enrichments that may arrive before or after the records they enrich."""
        for event in self.session.events:
            if event.kind == Kind.TOOL_RESULT and event.call_id in self.exec_ends:
                if not _still_running(event.text):
                    _apply_exec_end(event, self.exec_ends[event.call_id])
            elif event.kind == Kind.TOOL_CALL and event.call_id in self.patch_ends:
                diff, path = changes_diff(
                    self.patch_ends[event.call_id].get("changes"), self.session.cwd
                )
                event.diff = diff or event.diff
                event.file_path = short_path(path, self.session.cwd) if path else event.file_path
        self.reasoning_text = []
        return self.session


def _raw_item(reader: RolloutReader, item: dict) -> Event:
    return raw_event(item)


_ITEMS = {
    "message": RolloutReader._message,
    "reasoning": RolloutReader._reasoning,
    "function_call": RolloutReader._function_call,
    "custom_tool_call": RolloutReader._function_call,
    "function_call_output": RolloutReader._output,
    "custom_tool_call_output": RolloutReader._output,
    "local_shell_call": RolloutReader._local_shell,
    "web_search_call": RolloutReader._web_search,
}


def _parent_turn(context: dict, thread_id: str) -> bool:
    """A replayed turn of the parent: its UUIDv7 turn id was minted before this thread's id."""
    turn_ms, thread_ms = _uuid7_ms(context.get("turn_id")), _uuid7_ms(thread_id)
    return turn_ms is not None and thread_ms is not None and turn_ms < thread_ms


def _uuid7_ms(value: Any) -> int | None:
    """The creation time (ms) a version 7 UUID carries in its first 48 bits."""
    if not isinstance(value, str) or len(value) != 36 or value[14] != "7":
        return None
    try:
        return int(value[:8] + value[9:13], 16)
    except ValueError:
        return None


def _thread_spawn(source: Any) -> dict:
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    return spawn if isinstance(spawn, dict) else {}


def _content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        as_text(part.get("text")) for part in content if isinstance(part, dict) and "text" in part
    ]


def _patch_text(arguments: Any) -> str | None:
    """The ``apply_patch`` envelope: the custom tool's input, or (older builds) an argument of
    a ``shell`` call such as ``{"command": ["apply_patch", "*** Begin Patch..."]}``."""
    if isinstance(arguments, str):
        return arguments
    command = arguments.get("command") if isinstance(arguments, dict) else None
    parts = command if isinstance(command, list) else [command]
    return next((p for p in parts if isinstance(p, str) and "*** Begin Patch" in p), None)


def _argument_path(arguments: Any) -> str | None:
    if isinstance(arguments, dict):
        path = arguments.get("path") or arguments.get("file_path")
        return path if isinstance(path, str) else None
    return None


def _split_output(output: str) -> tuple[str, dict]:
    """Some outputs are ``{"output": ..., "metadata": {"exit_code", "duration_seconds"}}``."""
    decoded = json_or_text(output)
    if isinstance(decoded, dict) and "output" in decoded:
        metadata = decoded.get("metadata")
        return as_text(decoded["output"]), metadata if isinstance(metadata, dict) else {}
    return output, {}


def _still_running(text: str) -> bool:
    """An ``exec_command`` output that only says the process goes on (its exit, and the exec end
    event's exit code, belong to the ``write_stdin`` output that saw it end)."""
    head = text[:2000]
    return _RUNNING_LINE.search(head) is not None and _EXIT_LINE.search(head) is None


def _stated_exit_code(text: str) -> int | None:
    match = _EXIT_LINE.search(text[:2000])
    return int(match.group(1)) if match else None


def _apply_exec_end(result: Event, end: dict) -> None:
    exit_code = end.get("exit_code")
    if isinstance(exit_code, int):
        result.exit_code, result.is_error = exit_code, exit_code != 0
    duration = end.get("duration")
    if isinstance(duration, dict):
        seconds = as_int(duration.get("secs")) + as_int(duration.get("nanos")) / 1e9
        result.duration_ms = round(seconds * 1000)


def parse(paths: list[Path]) -> Session:
    """One rollout per thread; spawned agents' rollouts hang under their spawning calls."""
    readers = [_read(path) for path in paths]
    by_id = {reader.session.id: reader for reader in readers}
    main = next((r for r in readers if r.parent_id not in by_id), readers[0])
    links: dict[str, str] = {}
    for reader in readers:
        links.update(reader.spawned)
    for reader in readers:
        if reader is not main and reader.session.id not in links.values():
            _link_by_order(by_id.get(reader.parent_id), reader, links)
    agents = {r.session.id: r.session for r in readers if r is not main}
    attach_subagents(main.session, agents, links, _describe)
    return main.session


def _read(path: Path) -> RolloutReader:
    reader = RolloutReader(Session(id="", harness=HARNESS, format=FORMAT))
    feed_lines(reader.builder, path, reader.feed)
    session = reader.finish()
    session.id = session.id or path.stem
    session.reported_usage = codex_usage(reader.last_total) if reader.last_total else None
    reader.builder.note_cli_figure("last token_count: info.total_token_usage", reader.last_total)
    return reader


def _link_by_order(parent: RolloutReader | None, child: RolloutReader, links: dict) -> None:
    """Without a spawn-end event, pair the child with its parent's first unlinked spawn call."""
    if parent is None:
        return
    for event in parent.session.events:
        if event.tool_name == "spawn_agent" and event.call_id and event.call_id not in links:
            links[event.call_id] = child.session.id
            return


def _describe(child: Session, thread_id: str, call: Event | None) -> None:
    child.agent_id = thread_id
    arguments = call.arguments if call is not None and isinstance(call.arguments, dict) else {}
    child.agent_type = child.agent_type or arguments.get("agent_type")
    child.description = arguments.get("message") or child.description
