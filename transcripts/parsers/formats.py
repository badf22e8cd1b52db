"""The transcript formats the parsers read: one registry, in order of precedence.

The order settles two things: which format claims a record that several detectors accept, and
which format a run's transcript is read as when its files hold several (the others are ignored
with a warning). The platform derives its choices from ``format_choices()``; importing this
module loads the parsers (pure Python, standard library only) and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from transcripts.model import Session
from transcripts.parsers import (
    claude_jsonl,
    claude_stream,
    claude_tree,
    codex,
    codex_rollout,
    cursor,
    gemini,
    gemini_chat,
    kimi,
    opencode,
)


@dataclass(frozen=True)
class ToolArguments:
    """How a CLI's tool calls name their arguments: which file a call writes and with what, and
    which command it runs (``transcripts.lineage`` rebuilds the solution's versions from them),
    and which argument sums a call up in the viewer (the first one present). The defaults take
    every CLI's names, for formats whose tools are not listed one by one."""

    paths: tuple[str, ...] = ("file_path", "filePath", "path", "filename", "target_file")
    contents: tuple[str, ...] = ("content", "contents", "file_text", "text")
    replacements: tuple[tuple[str, str], ...] = (
        ("old_string", "new_string"),
        ("oldString", "newString"),
        ("old_str", "new_str"),
    )
    commands: tuple[str, ...] = ("command", "cmd", "script")
    summary: tuple[str, ...] = (
        "command",
        "cmd",
        "file_path",
        "filePath",
        "path",
        "pattern",
        "query",
        "url",
        "description",
        "prompt",
        "skill",
        "subagent_type",
    )


# Claude Code: Write(file_path, content), Edit(file_path, old_string, new_string, replace_all),
# MultiEdit(file_path, edits), NotebookEdit(notebook_path, new_source), Bash(command), Grep and
# Glob(pattern, path), WebFetch(url, prompt), Task/Agent(description, prompt, subagent_type).
CLAUDE_ARGUMENTS = ToolArguments(
    paths=("file_path", "notebook_path"),
    contents=("content",),
    replacements=(("old_string", "new_string"),),
    commands=("command",),
    summary=(
        "command",
        "file_path",
        "notebook_path",
        "pattern",
        "path",
        "url",
        "query",
        "description",
        "prompt",
        "skill",
        "subagent_type",
    ),
)
# opencode: write(filePath, content), edit(filePath, oldString, newString), bash(command).
OPENCODE_ARGUMENTS = ToolArguments(
    paths=("filePath",),
    contents=("content",),
    replacements=(("oldString", "newString"),),
    commands=("command",),
    summary=("command", "filePath", "pattern", "path", "url", "query", "description", "prompt"),
)
# Gemini CLI: write_file(file_path, content), replace(file_path, old_string, new_string),
# read_file(absolute_path or file_path), run_shell_command(command).
GEMINI_ARGUMENTS = ToolArguments(
    paths=("file_path", "absolute_path", "path"),
    contents=("content",),
    replacements=(("old_string", "new_string"),),
    commands=("command",),
    summary=("command", "file_path", "absolute_path", "path", "pattern", "query", "url"),
)


@dataclass(frozen=True)
class Format:
    name: str  # stored in Session.format and by the platform
    label: str  # for people: forms, the admin, error messages
    detector: Callable[[dict], bool]  # does this JSON record belong to the format?
    parser: Callable[[list[Path]], Session]  # every file of one run in this format
    # Where the parser fills the model differently from the rest (``transcripts.figures``):
    cost_summed_per_call: bool = False  # Session.cost_usd adds per-call costs; no CLI total
    call_ids_are_turns: bool = False  # Event.api_call_id names a whole turn, not one API call
    arguments: ToolArguments = ToolArguments()


def _claude_session_record(record: dict) -> bool:
    # A stream-json line may carry a session file's keys too; stream-json claims it.
    return claude_jsonl.looks_like(record) and not claude_stream.looks_like(record)


FORMATS: tuple[Format, ...] = (
    Format(
        claude_jsonl.FORMAT,
        "Claude Code session JSONL",
        _claude_session_record,
        claude_tree.parse,
        cost_summed_per_call=True,
        arguments=CLAUDE_ARGUMENTS,
    ),
    Format(
        claude_stream.FORMAT,
        "Claude Code stream-json",
        claude_stream.looks_like,
        claude_stream.parse,
        arguments=CLAUDE_ARGUMENTS,
    ),
    Format(codex_rollout.FORMAT, "Codex rollout", codex_rollout.looks_like, codex_rollout.parse),
    Format(
        codex.FORMAT, "codex exec --json", codex.looks_like, codex.parse, call_ids_are_turns=True
    ),
    Format(cursor.FORMAT, "Cursor Agent stream-json", cursor.looks_like, cursor.parse),
    Format(
        gemini.STREAM_FORMAT,
        "Gemini CLI stream-json",
        gemini.looks_like,
        gemini.parse_stream,
        arguments=GEMINI_ARGUMENTS,
    ),
    Format(
        gemini.DOCUMENT_FORMAT,
        "Gemini CLI JSON (output or saved chat)",
        gemini.looks_like_document,
        gemini_chat.parse_document,
        arguments=GEMINI_ARGUMENTS,
    ),
    Format(
        opencode.FORMAT,
        "opencode run --format json",
        opencode.looks_like,
        opencode.parse,
        cost_summed_per_call=True,
        arguments=OPENCODE_ARGUMENTS,
    ),
    Format(kimi.FORMAT, "Kimi CLI stream-json", kimi.looks_like, kimi.parse),
)

FORMATS_BY_NAME: dict[str, Format] = {entry.name: entry for entry in FORMATS}


def tool_arguments(name: str | None) -> ToolArguments:
    """The argument names of the tool calls of format `name` (every CLI's for an unknown one)."""
    entry = FORMATS_BY_NAME.get(name or "")
    return entry.arguments if entry else ToolArguments()


def format_choices() -> list[tuple[str, str]]:
    """(name, label) of every format, in precedence order: Django ``choices`` as they are."""
    return [(entry.name, entry.label) for entry in FORMATS]


def detect_record(record: dict) -> Format | None:
    """The first format whose detector accepts this record."""
    return next((entry for entry in FORMATS if entry.detector(record)), None)
