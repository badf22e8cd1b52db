"""``claude -p --output-format stream-json --verbose``: one line per message, subagent lines tagged
with ``parent_tool_use_id``. A run may print several ``result`` lines (follow-up turns, resumes):
their durations and turns are summed, while ``total_cost_usd`` and ``modelUsage`` (which includes
subagents) restate the running totals of the Claude Code process, so each process's last counts."""

from __future__ import annotations

from pathlib import Path

from transcripts.model import Event, Kind, Session, Usage
from transcripts.parsers.claude_blocks import adopt_task_figures
from transcripts.parsers.claude_jsonl import HARNESS, ClaudeReader
from transcripts.parsers.common import (
    as_id,
    as_int,
    as_text,
    attach_subagents,
    feed_lines,
)

FORMAT = "claude-stream-json"
_CLAUDE_INIT_KEYS = ("claude_code_version", "mcp_servers", "slash_commands", "agents", "skills")
_QUIET = frozenset({"stream_event", "keep_alive"})
# A result line's own figures, shown as written: ``usage`` covers the main thread only,
# ``modelUsage`` (and the cost) every model the process called, subagents included.
_RESULT_FIGURES = ("usage", "modelUsage", "total_cost_usd", "duration_ms", "num_turns")


def looks_like(record: dict) -> bool:
    kind = record.get("type")
    if kind == "system" and record.get("subtype") == "init":
        return any(key in record for key in _CLAUDE_INIT_KEYS)
    if kind == "system" and str(record.get("subtype", "")).startswith("hook_"):
        return "session_id" in record
    return kind in ("assistant", "user", "result") and "parent_tool_use_id" in record


class RunningTotals:
    """Cost and usage that each ``result`` line restates for the whole process so far. A drop
    means a new process (``--resume``): the previous process's last figures are kept and added."""

    def __init__(self):
        self.closed_cost: float | None = None
        self.closed_usage: Usage | None = None
        self.cost: float | None = None
        self.usage: Usage | None = None

    def update(self, cost: float | None, usage: Usage | None) -> None:
        if _dropped(self.cost, cost) or _dropped(_total(self.usage), _total(usage)):
            self.closed_cost = _add(self.closed_cost, self.cost)
            self.closed_usage = _sum_usage(self.closed_usage, self.usage)
            self.cost, self.usage = None, None
        self.cost = cost if cost is not None else self.cost
        self.usage = usage if usage is not None else self.usage

    def totals(self) -> tuple[float | None, Usage | None]:
        return _add(self.closed_cost, self.cost), _sum_usage(self.closed_usage, self.usage)


def _dropped(before: float | None, now: float | None) -> bool:
    return before is not None and now is not None and now < before


def _total(usage: Usage | None) -> int | None:
    return usage.total if usage is not None else None


def _sum_usage(first: Usage | None, second: Usage | None) -> Usage | None:
    if first is None or second is None:
        return first or second
    total = Usage()
    total.add(first)
    total.add(second)
    return total


class StreamReader(ClaudeReader):
    HANDLERS = {**ClaudeReader.HANDLERS, "result": "_result", "rate_limit_event": "_rate_limit"}

    def __init__(self, session: Session, agent_id: str | None = None):
        super().__init__(session, agent_id)
        self.running = RunningTotals()

    def _system(self, record: dict) -> None:
        subtype = str(record.get("subtype") or "system")
        if subtype == "init":
            self._init(record)
        elif subtype.startswith("hook_"):
            self._hook(record)
        elif subtype.startswith("task_"):
            self._note(record, subtype, record.get("summary") or record.get("description"))
        else:
            super()._system({**record, "content": record.get("content", record.get("message"))})

    def _init(self, record: dict) -> None:
        session = self.session
        session.id = session.id or str(record.get("session_id") or "")
        session.cwd = session.cwd or record.get("cwd")
        session.cli_version = session.cli_version or record.get("claude_code_version")
        self.builder.note_model(record.get("model"))
        text = f"model {record.get('model')}, {len(record.get('tools') or [])} tools"
        self._note(record, "init", text)

    def _hook(self, record: dict) -> None:
        parts = [record.get("hook_name"), record.get("stdout"), record.get("stderr")]
        event = self._note(record, "hook", "\n".join(as_text(p) for p in parts if p))
        event.exit_code = (
            record.get("exit_code") if isinstance(record.get("exit_code"), int) else None
        )

    def _note(self, record: dict, subtype: str, text) -> Event:
        event = Event(kind=Kind.SYSTEM, id="", subtype=subtype, text=as_text(text))
        event.timestamp = record.get("timestamp")
        return self.builder.add(event)

    def _rate_limit(self, record: dict) -> None:
        info = record.get("rate_limit_info")
        status = info.get("status") if isinstance(info, dict) else None
        self._note(record, "rate_limit", f"rate limit: {status}")

    def _result(self, record: dict) -> None:
        session = self.session
        event = self._note(record, "result", record.get("result") or record.get("subtype"))
        event.is_error = bool(record.get("is_error"))
        event.duration_ms = (
            record.get("duration_ms") if isinstance(record.get("duration_ms"), int) else None
        )
        session.duration_ms = _add(session.duration_ms, record.get("duration_ms"))
        session.num_turns = _add(session.num_turns, record.get("num_turns"))
        self.running.update(_add(None, record.get("total_cost_usd")), self._model_usage(record))
        session.cost_usd, session.reported_usage = self.running.totals()
        for key in _RESULT_FIGURES:
            self.builder.note_cli_figure(f"result.{key}", record.get(key))

    def _model_usage(self, record: dict) -> Usage | None:
        model_usage = record.get("modelUsage")
        if not isinstance(model_usage, dict):
            return None
        usage = Usage()
        for model, figures in model_usage.items():
            self.builder.note_model(model)
            usage.add(_model_figures(figures))
        return usage


def _model_figures(figures) -> Usage:
    if not isinstance(figures, dict):
        return Usage()
    return Usage(
        input=as_int(figures.get("inputTokens")),
        output=as_int(figures.get("outputTokens")),
        cache_read=as_int(figures.get("cacheReadInputTokens")),
        cache_write=as_int(figures.get("cacheCreationInputTokens")),
    )


def _add(total, value):
    if isinstance(value, bool) or not isinstance(value, int | float):
        return total
    return value if total is None else total + value


def parse(paths: list[Path]) -> Session:
    """Subagent lines go to a reader per ``parent_tool_use_id``, then hang under that call."""
    main = StreamReader(Session(id="", harness=HARNESS, format=FORMAT))
    agents: dict[str, StreamReader] = {}

    def route(record: dict) -> None:
        parent = as_id(record.get("parent_tool_use_id"))
        reader = _agent_reader(agents, parent) if parent else main
        if record.get("type") in _QUIET:
            reader.builder.count(str(record["type"]))
        else:
            reader.feed(record)

    for path in paths:
        feed_lines(main.builder, path, route)
    _attach(main, agents)
    return main.session


def _agent_reader(agents: dict[str, StreamReader], parent: str) -> StreamReader:
    if parent not in agents:
        session = Session(id=parent, harness=HARNESS, format=FORMAT, agent_id=parent)
        agents[parent] = StreamReader(session, parent)
    return agents[parent]


def _attach(main: StreamReader, agents: dict[str, StreamReader]) -> None:
    sessions = {call_id: reader.session for call_id, reader in agents.items()}
    version = main.session.cli_version
    agent_ids, figures = {}, {}  # tool_use id -> the agent id and figures its result reported
    for reader in [main, *agents.values()]:
        agent_ids.update(reader.links)
        figures.update(reader.task_figures)

    def describe(child: Session, call_id: str, call: Event | None) -> None:
        arguments = call.arguments if call is not None and isinstance(call.arguments, dict) else {}
        child.agent_id = agent_ids.get(call_id, call_id)
        child.agent_type = arguments.get("subagent_type")
        child.description = arguments.get("description")
        child.cli_version = version
        adopt_task_figures(child, figures.get(call_id, {}))

    attach_subagents(main.session, sessions, {key: key for key in sessions}, describe)
