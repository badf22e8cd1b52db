"""Pieces every parser shares: reading JSON lines, building a session, numbering events."""

from __future__ import annotations

import difflib
import json
import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from transcripts.model import Event, Kind, Session, Usage

try:  # optional: decodes JSON about 2.5x faster than the standard library (measured on 50 MB)
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - depends on the environment

    def _fast_loads(raw: bytes | str) -> Any:
        raise ValueError("orjson is not installed")  # the standard library decodes instead


class TranscriptError(ValueError):
    """The files hold no transcript this package can read."""


@dataclass
class Line:
    number: int
    record: Any  # the decoded JSON value, or None when the line is not JSON
    text: str | None = None  # the undecodable line, kept for a raw event
    problem: str = "malformed JSON"


# Redaction, storage and rendering walk decoded values recursively; deeper values are kept as
# text so that no later step can exceed Python's recursion limit. Real records nest about 10 deep.
MAX_JSON_DEPTH = 100


class NestedTooDeeply(ValueError):
    """Valid JSON nested deeper than ``MAX_JSON_DEPTH``."""


def decode_json(raw: bytes | str) -> Any:
    """A JSON value nested at most ``MAX_JSON_DEPTH`` deep, with NaN and infinities kept as their
    names (the page's ``JSON.parse`` refuses them); ValueError for anything else."""
    try:
        value = _fast_loads(raw)
    except ValueError:  # orjson refuses NaN, integers beyond 64 bits and very deep nesting
        try:
            value = json.loads(raw, parse_constant=str, parse_float=_finite_or_text)
        except RecursionError as error:
            raise NestedTooDeeply("JSON nested too deeply") from error
    if _may_nest_deeper(raw) and _nests_deeper(value, MAX_JSON_DEPTH):
        raise NestedTooDeeply("JSON nested too deeply")
    return value


def _finite_or_text(text: str) -> float | str:
    number = float(text)
    return number if math.isfinite(number) else text


def _may_nest_deeper(raw: bytes | str) -> bool:
    """A cheap test (two scans in C) that rules out deep nesting for almost every record."""
    opening = (b"[", b"{") if isinstance(raw, bytes) else ("[", "{")
    return raw.count(opening[0]) + raw.count(opening[1]) > MAX_JSON_DEPTH


def _nests_deeper(value: Any, limit: int) -> bool:
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def read_lines(path: Path) -> Iterator[Line]:
    """Decode a JSON-lines file one line at a time so big files are never held twice."""
    with open(path, "rb") as stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            try:
                yield Line(number, decode_json(raw))
            except ValueError as error:
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                problem = str(error) if isinstance(error, NestedTooDeeply) else "malformed JSON"
                yield Line(number, None, text, problem)


def bad_line_event(line: Line, name: str) -> tuple[Event, str]:
    """A raw event for a line that is not a JSON object, and the warning that goes with it."""
    if line.record is None:
        warning = f"{name}:{line.number}: {line.problem} kept as raw text"
        return Event(kind=Kind.RAW, id="", text=line.text or ""), warning
    warning = f"{name}:{line.number}: a JSON value that is not an object, kept as raw"
    return Event(kind=Kind.RAW, id="", raw=line.record), warning


def feed_lines(builder: SessionBuilder, path: Path, feed) -> None:
    """Feed each JSON object of ``path`` to ``feed``; anything else becomes a raw event."""
    for line in read_lines(path):
        if isinstance(line.record, dict):
            builder.guarded(feed, line.record, f"{path.name}:{line.number}")
        else:
            event, warning = bad_line_event(line, path.name)
            builder.add(event)
            builder.warn(warning)


def feed_files(builder: SessionBuilder, paths: list[Path], feed) -> Session:
    """``feed_lines`` over each of ``paths``; the session id falls back to the first file's stem."""
    for path in paths:
        feed_lines(builder, path, feed)
    builder.session.id = builder.session.id or paths[0].stem
    return builder.session


def as_id(value: Any) -> str | None:
    """An identifier field (call id, message id) as a string; None when it is not one."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def raw_event(record: Any, timestamp: str | None = None) -> Event:
    return Event(kind=Kind.RAW, id="", timestamp=timestamp, raw=record)


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)


def json_or_text(value: Any) -> Any:
    """Tool arguments written as a JSON string, decoded when they are JSON."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return decode_json(value)
        except ValueError:
            return value
    return value


MODEL_OUTPUT = frozenset({Kind.ASSISTANT, Kind.REASONING, Kind.TOOL_CALL})

# What a record of an unexpected shape raises in a parser (an overflow: an absurd number).
_DRIFT_ERRORS = (TypeError, AttributeError, ValueError, KeyError, IndexError, ArithmeticError)


class SessionBuilder:
    """Appends events to a session and keeps the indexes parsers need to link them."""

    def __init__(self, session: Session):
        self.session = session
        self.calls: dict[str, Event] = {}
        self.api_calls: dict[str, Event] = {}

    def add(self, event: Event) -> Event:
        _clean(event)
        self.session.events.append(event)
        if event.kind == Kind.TOOL_CALL and isinstance(event.call_id, str):
            self.calls[event.call_id] = event
        return event

    def warn(self, message: str) -> None:
        self.session.warnings.append(message)

    def count(self, record_type: str) -> None:
        counts = self.session.record_counts
        counts[record_type] = counts.get(record_type, 0) + 1

    def note_model(self, model: str | None) -> None:
        if model and model not in self.session.models:
            self.session.models.append(model)

    def note_time(self, timestamp: str | None) -> None:
        """Widen the session's span; branches and replays make record order unreliable."""
        if not isinstance(timestamp, str) or not timestamp:
            return
        session = self.session
        session.started_at = min(session.started_at or timestamp, timestamp)
        session.ended_at = max(session.ended_at or timestamp, timestamp)

    def set_api_usage(self, api_call_id: str, first: Event, usage: Usage) -> None:
        """Put ``usage`` on the first event of the API call, replacing an earlier snapshot."""
        holder = self.api_calls.setdefault(api_call_id, first)
        holder.usage = usage

    def usage_holder(self, events: list[Event], api_call_id: str) -> Event:
        """The event an API call's usage goes on: the call's first model output (the prompt and
        tool results before it are its input), or a usage notice when it shows none."""
        output = [event for event in events if event.kind in MODEL_OUTPUT]
        if not output:
            output = [self.add(Event(kind=Kind.SYSTEM, id="", subtype="usage"))]
        for event in output:
            event.api_call_id = api_call_id
        return output[0]

    def note_cli_figure(self, label: str, value: Any) -> None:
        """Keep a figure exactly as the CLI wrote it; a repeated label gets a number."""
        if value is None:
            return
        figures, key, n = self.session.cli_figures, label, 1
        while key in figures:
            n += 1
            key = f"{label} ({n})"
        figures[key] = value

    def call_for(self, call_id: str | None) -> Event | None:
        return self.calls.get(call_id) if isinstance(call_id, str) else None

    def guarded(self, feed, record: dict, where: str) -> None:
        """Formats drift between CLI versions: a record whose fields have unexpected types
        is kept verbatim with a warning instead of failing the whole transcript."""
        try:
            feed(record)
        except _DRIFT_ERRORS as error:
            self.add(raw_event(record, None))
            self.warn(f"{where}: record not understood ({type(error).__name__}), kept as raw")


_TEXT_FIELDS = ("timestamp", "model", "tool_name", "file_path", "diff", "subtype")


def _clean(event: Event) -> None:
    """Fields copied from a record keep the model's types even when the record's do not."""
    event.call_id, event.api_call_id = as_id(event.call_id), as_id(event.api_call_id)
    for name in _TEXT_FIELDS:
        if not isinstance(getattr(event, name), str | None):
            setattr(event, name, None)
    if not isinstance(event.text, str):
        event.text = as_text(event.text)
    if not isinstance(event.exit_code, int | None) or isinstance(event.exit_code, bool):
        event.exit_code = None
    if not isinstance(event.duration_ms, int | None) or isinstance(event.duration_ms, bool):
        event.duration_ms = None


def clean_session(session: Session) -> None:
    """Session fields taken from records: strings or None, and a string id."""
    for name in ("cwd", "cli_version", "started_at", "ended_at", "title", "agent_type"):
        if not isinstance(getattr(session, name), str | None):
            setattr(session, name, None)
    if not isinstance(session.description, str | None):
        session.description = as_text(session.description)
    session.id = as_text(session.id)
    session.models = [m for m in session.models if isinstance(m, str)]


def number_events(session: Session, prefix: str = "") -> None:
    """Give every event an id unique across the whole tree, stable for the same input."""
    for index, event in enumerate(session.events, start=1):
        event.id = f"{prefix}e{index}"
        for child_index, child in enumerate(event.children, start=1):
            number_events(child, f"{event.id}-{child_index}-")


# Storing and rendering a session recurse once per level of subagents; deeper agents are hung at
# the top level instead (with a warning), so nothing is lost and no recursion limit is reached.
MAX_SUBAGENT_DEPTH = 32


def attach_subagents(main: Session, agents: dict[str, Session], links: dict[str, str], describe):
    """Hang each agent session under the tool call that spawned it (``links``: call id -> agent).

    Breadth first from the main session, so a cycle in the links cannot form a cycle in the tree;
    agents no call spawned, or spawned deeper than ``MAX_SUBAGENT_DEPTH``, are kept under a system
    event of the main session, with a warning.
    ``describe(agent_session, agent_key, call_or_None)`` fills in the agent's own fields.
    """
    placed: set[str] = set()
    too_deep = _place_below(main, 0, agents, links, describe, placed)
    while orphans := [key for key in agents if key not in placed]:
        spawned = _spawned_within(agents, links, orphans)
        for key in [k for k in orphans if k not in spawned] or orphans[:1]:
            main.warnings.append(f"subagent {key}: {_why_orphaned(key in too_deep)}")
            describe(agents[key], key, None)
            label = f"{orphan_kind(key, agents[key], too_deep=key in too_deep)}: {key}"
            holder = Event(kind=Kind.SYSTEM, id="", subtype="subagent", text=label)
            main.events.append(holder)
            holder.children.append(agents[key])
            placed.add(key)
            too_deep |= _place_below(agents[key], 1, agents, links, describe, placed)


def orphan_kind(key: str, agent: Session, *, too_deep: bool = False) -> str:
    """What an agent hung at the top level is, for its label: Claude Code's compaction and
    warm-up agents run without a spawning tool call (a compaction agent's id says so,
    ``acompact-...``; a warm-up agent's one prompt is "Warmup")."""
    if too_deep:
        return "subagent spawned too deep"
    names = f"{key} {agent.agent_type or ''}".lower()
    if "compact" in names:
        return "compaction agent"
    prompt = next((e.text.strip() for e in agent.events if e.kind == Kind.USER and e.text), "")
    if "warmup" in names or prompt == "Warmup":
        return "warm-up agent"
    return "subagent without a spawning call"


def _why_orphaned(too_deep: bool) -> str:
    if too_deep:
        return f"spawned more than {MAX_SUBAGENT_DEPTH} levels deep, shown at the top level"
    return "no spawning tool call found"


def _place_below(root: Session, depth: int, agents, links, describe, placed: set[str]) -> set:
    """Place the agents spawned below ``root``; return those left out for being too deep."""
    too_deep = set()
    queue = deque([(root, depth)])
    while queue:
        session, level = queue.popleft()
        for event in session.events:
            key = links.get(event.call_id) if event.kind == Kind.TOOL_CALL else None
            if key not in agents or key in placed:
                continue
            if level >= MAX_SUBAGENT_DEPTH:
                too_deep.add(key)
                continue
            placed.add(key)
            describe(agents[key], key, event)
            event.children.append(agents[key])
            queue.append((agents[key], level + 1))
    return too_deep


def _spawned_within(agents: dict[str, Session], links, keys: list[str]) -> set[str]:
    spawned, wanted = set(), set(keys)
    for key in keys:
        for event in agents[key].events:
            target = links.get(event.call_id) if event.call_id else None
            if target in wanted and target != key:
                spawned.add(target)
    return spawned


def short_path(path: str, cwd: str | None) -> str:
    """A path relative to the working directory when under it, for diff headers."""
    if isinstance(cwd, str) and cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path.lstrip("/")


def text_diff(path: str, before: str | None, after: str | None) -> str | None:
    """A unified diff between two versions of a file; ``before`` None means a new file."""
    if before == after or after is None:
        return None
    old_name = f"a/{path.lstrip('/')}" if before is not None else "/dev/null"
    lines = difflib.unified_diff(
        (before or "").splitlines(),
        after.splitlines(),
        fromfile=old_name,
        tofile=f"b/{path.lstrip('/')}",
        lineterm="",
    )
    return "\n".join(lines) + "\n"


def edit_diff(path: str | None, arguments: Any, old_key: str, new_key: str) -> str | None:
    """The diff of an edit tool's arguments: a string replacement, or a whole new ``content``."""
    if not path or not isinstance(arguments, dict):
        return None
    if isinstance(arguments.get(new_key), str):
        return text_diff(path, as_text(arguments.get(old_key)), arguments[new_key])
    if isinstance(arguments.get("content"), str):
        return text_diff(path, None, arguments["content"])
    return None


def iso_from_ms(value: Any) -> str | None:
    """An ISO 8601 UTC time from epoch milliseconds, as opencode and Cursor write them."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value if isinstance(value, str) else None
    try:
        moment = datetime.fromtimestamp(value / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):  # out of range, infinite or NaN
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
