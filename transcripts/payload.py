"""The compact JSON the viewer page embeds: every session flattened, every byte of content kept.

Keys are short because a 50 MB log holds tens of thousands of events; fields at their default
are left out. The browser (``assets/viewer.js``) reads this shape and nothing else.
"""

from __future__ import annotations

import json
import re

from transcripts.figures import turns
from transcripts.model import Event, Kind, Session, Usage, parse_timestamp
from transcripts.parsers.formats import tool_arguments

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")
_USAGE_KEYS = ("input", "output", "cache_read", "cache_write", "reasoning")


def build_payload(session: Session) -> dict:
    builder = _Builder()
    builder.add_session(session, parent=None, depth=0)
    # the arguments that sum a tool call up, in order (the format registry's, per CLI)
    return {"sessions": builder.sessions, "args": list(tool_arguments(session.format).summary)}


def dump_payload(payload: dict) -> str:
    """JSON that is safe between <script> tags: no '</script', no '<!--', no U+2028/U+2029."""
    text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"), check_circular=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def session_totals(session: Session) -> dict:
    """Totals of a session and every subagent below it (``own_*``: this session only)."""
    own = session.usage()
    inclusive = Usage()
    calls = tools = subagents = 0
    for _depth, sub in session.walk():
        inclusive.add(sub.usage() if sub is not session else own)
        for event in sub.events:
            calls += event.usage is not None
            tools += event.kind == Kind.TOOL_CALL
            subagents += len(event.children)
    return {
        "usage": _usage_dict(inclusive),
        "own_usage": _usage_dict(own),
        "cost_usd": session.cost_usd,
        "duration_ms": session_duration_ms(session),
        "turns": turns(session),
        "api_calls": calls,
        "tool_calls": tools,
        "subagents": subagents,
    }


def session_duration_ms(session: Session) -> int | None:
    if session.duration_ms is not None:
        return session.duration_ms
    start, end = parse_timestamp(session.started_at), parse_timestamp(session.ended_at)
    if start is None or end is None:
        return None
    return int((end - start).total_seconds() * 1000)


def _usage_dict(usage: Usage) -> dict:
    return {key: getattr(usage, key) for key in _USAGE_KEYS}


class _Builder:
    def __init__(self) -> None:
        self.sessions: list[dict] = []
        self.anchors: set[str] = set()
        self.tool_names: dict[str, str] = {}

    def add_session(self, session: Session, *, parent: list | None, depth: int) -> int:
        index = len(self.sessions)
        entry = _session_header(session, parent=parent, depth=depth)
        self.sessions.append(entry)
        entry["ev"] = [
            self.event(event, index, position) for position, event in enumerate(session.events)
        ]
        return index

    def event(self, event: Event, session_index: int, position: int) -> dict:
        out = {"k": event.kind, "id": self.anchor(event.id)}
        _put(out, "t", event.timestamp)
        _put(out, "x", event.text)
        _put(out, "m", event.model)
        if event.usage is not None:
            out["u"] = [getattr(event.usage, key) for key in _USAGE_KEYS]
        self.tool_fields(event, out)
        if event.children:
            out["ch"] = [
                self.add_session(
                    child,
                    parent=[session_index, position],
                    depth=self.sessions[session_index]["dp"] + 1,
                )
                for child in event.children
            ]
        return out

    def tool_fields(self, event: Event, out: dict) -> None:
        if event.call_id and event.tool_name:
            self.tool_names[event.call_id] = event.tool_name
        tool_name = event.tool_name
        if tool_name is None and event.call_id:
            tool_name = self.tool_names.get(event.call_id)
        _put(out, "tn", tool_name)
        _put(out, "ci", event.call_id)
        _put(out, "a", event.arguments)
        _put(out, "f", event.file_path)
        _put(out, "df", event.diff)
        _put(out, "ec", event.exit_code)
        _put(out, "ms", event.duration_ms)
        _put(out, "st", event.subtype)
        _put(out, "raw", event.raw)
        if event.encrypted:
            out["enc"] = 1
        if event.is_error:
            out["err"] = 1

    def anchor(self, event_id: str) -> str:
        """A DOM id unique in the page, made only of [A-Za-z0-9_-]."""
        base = anchor_base(event_id)
        anchor, n = base, 1
        while anchor in self.anchors:
            n += 1
            anchor = f"{base}-{n}"
        self.anchors.add(anchor)
        return anchor


def _session_header(session: Session, *, parent: list | None, depth: int) -> dict:
    out: dict = {"id": session.id, "dp": depth, "tot": session_totals(session)}
    _put(out, "p", parent)
    _put(out, "hn", session.harness)
    _put(out, "m", session.models)
    _put(out, "at", session.agent_type)
    _put(out, "ai", session.agent_id)
    _put(out, "d", session.description)
    _put(out, "w", session.warnings)
    if depth:  # the main session's own figures are in the page's server-rendered totals
        _put(out, "cf", session.cli_figures or None)
    return out


def _put(out: dict, key: str, value) -> None:
    if value is not None and value != "" and value != []:
        out[key] = value


def anchor_base(event_id: str | None) -> str:
    """The viewer's anchor of an event (its permalink is ``#e-<anchor>``); a later event whose id
    collides gets a ``-n`` suffix."""
    return _UNSAFE_ID.sub("_", str(event_id or "x"))[:80]
