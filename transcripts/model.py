"""The normalized transcript: one shape for every agent CLI.

Parsers (``transcripts.parsers``) produce a ``Session``; the renderer reads one. The dict form
(``to_dict`` / ``from_dict``) is what the platform stores, so rendering never needs a re-parse.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any


class Kind:
    USER = "user"  # a prompt typed by a person (or injected as the task)
    ASSISTANT = "assistant"  # assistant prose
    REASONING = "reasoning"  # thinking / reasoning summary; may be empty or encrypted
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    SYSTEM = "system"  # compaction, hooks, API errors, init, result lines
    RAW = "raw"  # a record the parser did not understand, kept verbatim

    ALL = (USER, ASSISTANT, REASONING, TOOL_CALL, TOOL_RESULT, SYSTEM, RAW)


@dataclass
class Usage:
    """Token usage of one API call (or a total).

    ``input`` excludes cache reads and writes. ``output`` counts every generated token, reasoning
    included; ``reasoning`` repeats the reasoning share where the CLI reports it (Codex, Gemini,
    opencode), so ``total`` never counts it twice.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    def add(self, other: Usage) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


@dataclass
class Event:
    kind: str
    id: str  # stable within the session; used for permalinks
    timestamp: str | None = None  # ISO 8601 as written by the CLI
    text: str = ""
    model: str | None = None
    # An API call's usage sits on the first event of that call and nowhere else.
    usage: Usage | None = None
    api_call_id: str | None = None  # message.id for Claude, turn id for Codex, ...
    # reasoning
    encrypted: bool = False
    # tool_call
    tool_name: str | None = None
    call_id: str | None = None
    arguments: Any = None
    file_path: str | None = None
    diff: str | None = None  # unified diff when the call wrote or edited a file
    # tool_result (call_id links it to its call)
    is_error: bool = False
    exit_code: int | None = None
    duration_ms: int | None = None
    # system
    subtype: str | None = None  # compaction, hook, api_error, init, result, ...
    # subagent sessions spawned by this tool call, nested to any depth
    children: list[Session] = field(default_factory=list)
    raw: Any = None  # the unparsed record, for kind RAW only


@dataclass
class Session:
    id: str
    harness: str  # claude-code, codex, cursor, gemini-cli, kimi-cli, opencode
    format: str  # the parser that read it, e.g. claude-jsonl, claude-stream-json, codex-exec-json
    models: list[str] = field(default_factory=list)
    cli_version: str | None = None
    cwd: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    # subagent sessions only
    agent_id: str | None = None
    agent_type: str | None = None
    description: str | None = None
    # figures the CLI itself reported (e.g. a stream-json result line); None when absent
    reported_usage: Usage | None = None
    # the CLI's own figures exactly as written, for display beside the normalized ones:
    # a label naming the record and field (e.g. "result.usage") -> the value as written
    cli_figures: dict[str, Any] = field(default_factory=dict)
    cost_usd: float | None = None
    duration_ms: int | None = None
    num_turns: int | None = None
    title: str | None = None  # a summary or title the CLI wrote for the session
    # input records read per record type (e.g. {"user": 89, "assistant": 172}), this session only
    record_counts: dict[str, int] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the parser skipped or could not link

    def walk(self):
        """Yield (depth, session) for this session and every subagent below it."""
        stack = [(0, self)]
        while stack:
            depth, session = stack.pop()
            yield depth, session
            for event in reversed(session.events):
                for child in reversed(event.children):
                    stack.append((depth + 1, child))

    def usage(self) -> Usage:
        """This session's own API calls, subagents excluded."""
        total = Usage()
        for event in self.events:
            if event.usage is not None:
                total.add(event.usage)
        return total

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Session:
        data = dict(data)
        data["events"] = [_event_from_dict(e) for e in data.get("events", [])]
        if data.get("reported_usage") is not None:
            data["reported_usage"] = Usage(**data["reported_usage"])
        return cls(**data)


def parse_timestamp(value: str | None) -> datetime | None:
    """A timestamp as the CLIs write them (ISO 8601, ``Z`` for UTC); one without a zone is UTC."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _event_from_dict(data: dict) -> Event:
    data = dict(data)
    if data.get("usage") is not None:
        data["usage"] = Usage(**data["usage"])
    data["children"] = [Session.from_dict(c) for c in data.get("children", [])]
    return Event(**data)
