"""Assemble a Claude Code run from its files: the main session and its subagents, to any depth."""

from __future__ import annotations

from pathlib import Path

from transcripts.model import Event, Kind, Session
from transcripts.parsers.claude_blocks import SUBAGENT_TOOLS, adopt_task_figures
from transcripts.parsers.claude_jsonl import ClaudeReader, new_session
from transcripts.parsers.common import (
    TranscriptError,
    as_id,
    attach_subagents,
    decode_json,
    feed_lines,
)


class ClaudeRun:
    def __init__(self):
        self.main: ClaudeReader | None = None
        self.agents: dict[str, ClaudeReader] = {}
        self.pool: dict[str, list[dict]] = {}  # agent id -> records found outside its own file
        self.links: dict[str, str] = {}  # tool_use id -> agent id
        self.meta: dict[str, dict] = {}
        self.inline_roots: dict[str, str] = {}  # sidechain uuid -> the uuid of its root
        self.task_figures: dict[str, dict] = {}  # tool_use id -> its Task result's figures

    def read_main(self, path: Path) -> None:
        self.main = reader = ClaudeReader(new_session())
        feed_lines(reader.builder, path, self._route)
        reader.session.id = reader.session.id or path.stem

    def _route(self, record: dict) -> None:
        if record.get("isSidechain"):
            self.pool.setdefault(self._sidechain_key(record), []).append(record)
        else:
            self.main.feed(record)

    def _sidechain_key(self, record: dict) -> str:
        if as_id(record.get("agentId")):
            return as_id(record["agentId"])
        uuid, parent = as_id(record.get("uuid")), as_id(record.get("parentUuid"))
        key = self.inline_roots.get(parent) or uuid or "sidechain"
        if uuid:
            self.inline_roots[uuid] = key
        return key

    def _pool_agent_progress(self, record: dict) -> None:
        """An ``agent_progress`` record mirrors one record of a subagent into its parent's file."""
        data = record["data"]
        agent_id, message = as_id(data.get("agentId")), data.get("message")
        if not agent_id:
            return
        if as_id(record.get("parentToolUseID")):
            self.links.setdefault(as_id(record["parentToolUseID"]), agent_id)
        if isinstance(message, dict):
            self.pool.setdefault(agent_id, []).append(message)

    def read_agent(self, path: Path) -> None:
        agent_id = path.name.removeprefix("agent-").removesuffix(".jsonl")
        reader = self.agents.setdefault(agent_id, ClaudeReader(new_session(), agent_id))
        feed_lines(reader.builder, path, reader.feed)

    def read_meta(self, path: Path) -> None:
        agent_id = path.name.removeprefix("agent-").removesuffix(".meta.json")
        try:
            meta = decode_json(path.read_bytes())
        except (OSError, ValueError):
            return
        if isinstance(meta, dict):
            self.meta[agent_id] = meta
            if as_id(meta.get("toolUseId")):
                self.links[as_id(meta["toolUseId"])] = agent_id

    def assemble(self) -> Session:
        for reader in [self.main, *self.agents.values()]:
            for record in reader.agent_progress:
                self._pool_agent_progress(record)
        for agent_id, records in self.pool.items():
            reader = self.agents.setdefault(agent_id, ClaudeReader(new_session(), agent_id))
            for record in records:
                reader.builder.guarded(reader.feed, record, f"subagent {agent_id}")
        for reader in [self.main, *self.agents.values()]:
            self.links.update(reader.links)
            self.task_figures.update(reader.task_figures)
        _link_unnamed_agents(self)
        agents = {key: reader.session for key, reader in self.agents.items()}
        attach_subagents(self.main.session, agents, self.links, self.describe)
        return self.main.session

    def describe(self, child: Session, agent_id: str, call: Event | None) -> None:
        meta = self.meta.get(agent_id, {})
        arguments = call.arguments if call is not None and isinstance(call.arguments, dict) else {}
        child.id = agent_id
        child.agent_id = agent_id
        child.agent_type = meta.get("agentType") or arguments.get("subagent_type")
        child.description = meta.get("description") or arguments.get("description")
        if call is not None:
            adopt_task_figures(child, self.task_figures.get(call.call_id, {}))


def _link_unnamed_agents(run: ClaudeRun) -> None:
    """Old inline sidechains name no agent: match their first prompt to a Task call's prompt,
    then pair what is left in order of appearance."""
    unlinked = {key: r for key, r in run.agents.items() if key not in run.links.values()}
    calls = [c for c in _subagent_calls(run) if c.call_id and c.call_id not in run.links]
    for call in list(calls):
        prompt = call.arguments.get("prompt") if isinstance(call.arguments, dict) else None
        key = next((k for k, r in unlinked.items() if _first_prompt(r.session) == prompt), None)
        if key is not None:
            run.links[call.call_id] = key
            calls.remove(call)
            del unlinked[key]
    for call, key in zip(calls, unlinked, strict=False):
        run.links[call.call_id] = key
        run.main.builder.warn(f"subagent {key}: linked to call {call.call_id} by order")


def _subagent_calls(run: ClaudeRun):
    for reader in [run.main, *run.agents.values()]:
        for event in reader.session.events:
            if event.kind == Kind.TOOL_CALL and event.tool_name in SUBAGENT_TOOLS:
                yield event


def _first_prompt(session: Session) -> str | None:
    return next((e.text for e in session.events if e.kind == Kind.USER), None)


def parse(paths: list[Path]) -> Session:
    metas = [p for p in paths if p.name.endswith(".meta.json")]
    logs = [p for p in paths if not p.name.endswith(".meta.json")]
    if not logs:
        raise TranscriptError("no Claude Code session file among the files given")
    mains = [p for p in logs if not p.name.startswith("agent-")] or logs[:1]
    run = ClaudeRun()
    run.read_main(mains[0])
    for path in mains[1:]:
        run.main.builder.warn(f"{path}: a second main session file, ignored")
    for path in logs:
        if path not in mains:
            run.read_agent(path)
    for path in metas:
        run.read_meta(path)
    return run.assemble()
