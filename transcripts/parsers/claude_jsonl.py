"""Claude Code session files (``~/.claude/projects/<slug>/<sessionId>.jsonl``) and their subagents.

Subagent records come inline (``isSidechain``), in ``agent-<id>.jsonl`` beside the session file, or
in ``<sessionId>/subagents/agent-<id>.jsonl``, and may be mirrored again in ``progress`` records;
``claude_tree`` gathers them and hangs each under its spawning tool call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from transcripts.model import Event, Kind, Session
from transcripts.parsers import claude_blocks as blocks
from transcripts.parsers.common import (
    SessionBuilder,
    as_id,
    as_text,
    decode_json,
    raw_event,
)

FORMAT = "claude-jsonl"
HARNESS = "claude-code"
SKIPPED = frozenset({"file-history-snapshot", "queue-operation", "file-history-delta"})
TITLES = {"summary": "summary", "ai-title": "aiTitle", "custom-title": "customTitle"}
SYSTEM_SUBTYPES = {"compact_boundary": "compaction", "stop_hook_summary": "hook"}
_AGENT_ID_TEXT = re.compile(r"agentId: ([\w-]+)")


def looks_like(record: dict) -> bool:
    if record.get("type") in ("summary", "file-history-snapshot", "queue-operation"):
        return True
    return "parentUuid" in record or ("uuid" in record and "sessionId" in record)


class ClaudeReader:
    """Turns the records of one Claude Code session (main or subagent) into its events."""

    HANDLERS = {
        "assistant": "_assistant",
        "user": "_user",
        "system": "_system",
        "progress": "_progress",
    }

    def __init__(self, session: Session, agent_id: str | None = None):
        self.builder = SessionBuilder(session)
        self.agent_id = agent_id
        self.links: dict[str, str] = {}  # Task/Agent tool_use id -> spawned agent id
        self.uuids: set[str] = set()
        self.costs: dict[str, float] = {}  # message id -> costUSD written by older builds
        self.task_figures: dict[str, dict] = {}  # Task/Agent tool_use id -> its result's figures
        self.agent_progress: list[dict] = []  # progress records mirroring a subagent's records

    @property
    def session(self) -> Session:
        return self.builder.session

    def feed(self, record: dict) -> None:
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            if uuid in self.uuids:
                return
            self.uuids.add(uuid)
        record_type = str(record.get("type"))
        self.builder.count(record_type)
        self._envelope(record)
        handler = self.HANDLERS.get(record_type)
        if handler is not None:
            getattr(self, handler)(record)
        elif record_type in TITLES:
            self.session.title = as_text(record.get(TITLES[record_type])) or self.session.title
        elif record_type not in SKIPPED:
            self.builder.add(raw_event(record, record.get("timestamp")))

    def _envelope(self, record: dict) -> None:
        session = self.session
        self.builder.note_time(record.get("timestamp"))
        if session.cwd is None and isinstance(record.get("cwd"), str):
            session.cwd = record["cwd"]
        if session.cli_version is None and isinstance(record.get("version"), str):
            session.cli_version = record["version"]
        if not session.id and isinstance(record.get("sessionId"), str):
            session.id = record["sessionId"]

    def _assistant(self, record: dict) -> None:
        message = record.get("message")
        if not isinstance(message, dict):
            self.builder.add(raw_event(record, record.get("timestamp")))
            return
        events = blocks.assistant_events(message, record.get("timestamp"))
        api_call_id = message.get("id") if isinstance(message.get("id"), str) else None
        if record.get("isApiErrorMessage") or record.get("is_api_error_message"):
            _as_system(events, "api_error")
        model = message.get("model")
        if model != "<synthetic>":
            self.builder.note_model(model)
        for event in events:
            event.api_call_id = api_call_id
            blocks.arguments_diff(event, self.builder.session.cwd)
            self.builder.add(event)
        usage = blocks.claude_usage(message.get("usage"))
        if events and api_call_id and usage is not None:
            self.builder.set_api_usage(api_call_id, events[0], usage)
        self._note_cost(api_call_id, record.get("costUSD"))

    def _note_cost(self, api_call_id: str | None, cost) -> None:
        """Older builds wrote ``costUSD`` per record; as for usage, a message's last one counts."""
        if api_call_id and isinstance(cost, int | float) and not isinstance(cost, bool):
            self.costs[api_call_id] = cost
            self.session.cost_usd = sum(self.costs.values())

    def _user(self, record: dict) -> None:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        events = blocks.user_block_events(content, record.get("timestamp"))
        if record.get("isCompactSummary"):
            _as_system(events, "compaction_summary")
        elif record.get("isMeta"):
            _as_system(events, "injected")
        detail = record.get("toolUseResult", record.get("tool_use_result"))
        for event in events:
            self.builder.add(event)
            if event.kind == Kind.TOOL_RESULT:
                blocks.apply_tool_use_result(self.builder, event, detail)
                self._note_agent_link(event, detail, record)

    def _note_agent_link(self, result: Event, detail: Any, record: dict) -> None:
        """Remember which agent a Task/Agent call spawned, from wherever this build wrote it."""
        agent_id = as_id(detail.get("agentId")) if isinstance(detail, dict) else None
        call = self.builder.call_for(result.call_id)
        if not agent_id and call is not None and call.tool_name in blocks.SUBAGENT_TOOLS:
            match = _AGENT_ID_TEXT.search(result.text)
            own = as_id(record.get("agentId"))
            agent_id = match.group(1) if match else (own if own != self.agent_id else None)
        if agent_id and result.call_id:
            self.links[result.call_id] = agent_id
            self.task_figures[result.call_id] = blocks.task_figures(detail)

    def _progress(self, record: dict) -> None:
        """``hook_progress`` is a hook run; ``agent_progress`` mirrors a subagent's record (the run
        gathers those); other progress (a running command's partial output) is transient."""
        data = record.get("data")
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == "hook_progress":
            parts = [data.get("hookEvent"), data.get("hookName"), data.get("command")]
            text = " · ".join(as_text(part) for part in parts if part) or "hook"
            hook = Event(kind=Kind.SYSTEM, id="", timestamp=record.get("timestamp"), text=text)
            hook.subtype = "hook"
            self.builder.add(hook)
        elif kind == "agent_progress":
            self.agent_progress.append(record)

    def _system(self, record: dict) -> None:
        subtype = str(record.get("subtype") or "system")
        text = record.get("content")
        if text is None and subtype == "turn_duration":
            text = f"turn took {record.get('durationMs')} ms"
            taken = record.get("durationMs")
            if isinstance(taken, int) and not isinstance(taken, bool) and taken >= 0:
                # the CLI's own duration: the sum of its turns (idle time between them is not)
                session = self.builder.session
                session.duration_ms = (session.duration_ms or 0) + taken
        elif text is None and subtype == "stop_hook_summary":
            text = _hook_summary(record)
        event = Event(
            kind=Kind.SYSTEM,
            id="",
            timestamp=record.get("timestamp"),
            subtype=SYSTEM_SUBTYPES.get(subtype, subtype),
            text=as_text(text if text is not None else record.get("error")),
        )
        event.is_error = bool(record.get("hookErrors")) or record.get("level") == "error"
        self.builder.add(event)


def _hook_summary(record: dict) -> str:
    """The hooks a stop-hook summary ran, their errors, and why they stopped the agent."""
    infos = record.get("hookInfos") if isinstance(record.get("hookInfos"), list) else []
    errors = record.get("hookErrors") if isinstance(record.get("hookErrors"), list) else []
    lines = [as_text(info.get("command")) for info in infos if isinstance(info, dict)]
    lines += [f"error: {as_text(error)}" for error in errors]
    if record.get("stopReason"):
        lines.append(f"stop reason: {as_text(record['stopReason'])}")
    return "\n".join(lines)


def _as_system(events: list[Event], subtype: str) -> None:
    for event in events:
        if event.kind in (Kind.USER, Kind.ASSISTANT):
            event.kind, event.subtype = Kind.SYSTEM, subtype


def new_session(session_id: str = "", agent_id: str | None = None) -> Session:
    return Session(id=session_id, harness=HARNESS, format=FORMAT, agent_id=agent_id)


def session_files_for(path: Path) -> list[Path]:
    """The session file and every subagent file Claude Code wrote for it, main file first."""
    path = Path(path)
    found = [path]
    if not path.name.startswith("agent-"):
        beside = sorted(path.parent.glob("agent-*.jsonl"))
        found += [agent for agent in beside if _first_session_id(agent) == path.stem]
    folder = path.parent / path.stem / "subagents"
    if folder.is_dir():
        found += sorted(folder.glob("agent-*.jsonl")) + sorted(folder.glob("agent-*.meta.json"))
    return found


def _first_session_id(path: Path) -> str | None:
    """Agent files beside a session file may belong to any session of the project folder."""
    try:
        with open(path, "rb") as stream:
            record = decode_json(stream.readline() or b"null")
    except (OSError, ValueError):
        return None
    return record.get("sessionId") if isinstance(record, dict) else None
