"""Anthropic message content shared by Claude Code's session files and its stream-json output."""

from __future__ import annotations

import difflib
import re
from typing import Any

from transcripts.model import Event, Kind, Session, Usage
from transcripts.parsers.common import (
    SessionBuilder,
    as_int,
    as_text,
    short_path,
)

SUBAGENT_TOOLS = ("Task", "Agent")
# What a Task/Agent result's ``toolUseResult`` says about the subagent run, kept verbatim.
TASK_FIGURES = ("status", "totalDurationMs", "totalTokens", "totalToolUseCount", "usage")
_EXIT_CODE = re.compile(r"^(?:Error: )?Exit code (\d+)")


def claude_usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    return Usage(
        input=as_int(usage.get("input_tokens")),
        output=as_int(usage.get("output_tokens")),
        cache_read=as_int(usage.get("cache_read_input_tokens")),
        cache_write=as_int(usage.get("cache_creation_input_tokens")),
    )


def tool_file_path(arguments: Any) -> str | None:
    if not isinstance(arguments, dict):
        return None
    for key in ("file_path", "notebook_path", "path"):
        if isinstance(arguments.get(key), str):
            return arguments[key]
    return None


def assistant_events(message: dict, timestamp: str | None) -> list[Event]:
    """One event per content block of an assistant message."""
    model = message.get("model")
    events = []
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    for block in content if isinstance(content, list) else []:
        event = _assistant_block(block) if isinstance(block, dict) else None
        if event is None:
            event = Event(kind=Kind.RAW, id="", raw=block)
        event.timestamp, event.model = timestamp, model
        events.append(event)
    return events


def _assistant_block(block: dict) -> Event | None:
    kind = block.get("type")
    if kind == "text":
        return Event(kind=Kind.ASSISTANT, id="", text=as_text(block.get("text")))
    if kind == "thinking":
        text = as_text(block.get("thinking"))
        return Event(kind=Kind.REASONING, id="", text=text, encrypted=not text)
    if kind == "redacted_thinking":
        return Event(kind=Kind.REASONING, id="", encrypted=True)
    if kind in ("tool_use", "server_tool_use"):
        arguments = block.get("input")
        return Event(
            kind=Kind.TOOL_CALL,
            id="",
            tool_name=block.get("name"),
            call_id=block.get("id"),
            arguments=arguments,
            file_path=tool_file_path(arguments),
        )
    return None


def user_block_events(content: Any, timestamp: str | None) -> list[Event]:
    """Events for a user message: prompt text, images, and tool results."""
    if isinstance(content, str):
        return [Event(kind=Kind.USER, id="", timestamp=timestamp, text=content)]
    events = []
    for block in content if isinstance(content, list) else []:
        event = _user_block(block) if isinstance(block, dict) else None
        if event is None:
            event = Event(kind=Kind.RAW, id="", raw=block)
        event.timestamp = timestamp
        events.append(event)
    return events


def _user_block(block: dict) -> Event | None:
    kind = block.get("type")
    if kind == "text":
        return Event(kind=Kind.USER, id="", text=as_text(block.get("text")))
    if kind == "image":
        return Event(kind=Kind.USER, id="", text=f"[image {_media_type(block)}]")
    if kind == "tool_result":
        text = tool_result_text(block.get("content"))
        return Event(
            kind=Kind.TOOL_RESULT,
            id="",
            call_id=block.get("tool_use_id"),
            text=text,
            is_error=bool(block.get("is_error")),
            exit_code=_exit_code(text),
        )
    return None


def _media_type(block: dict) -> str:
    source = block.get("source")
    return source.get("media_type", "") if isinstance(source, dict) else ""


def _exit_code(text: str) -> int | None:
    match = _EXIT_CODE.match(text)
    return int(match.group(1)) if match else None


def tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return as_text(content)
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(as_text(block.get("text")))
        elif isinstance(block, dict) and block.get("type") == "image":
            parts.append(f"[image {_media_type(block)}]")
        else:
            parts.append(as_text(block))
    return "\n".join(parts)


def apply_tool_use_result(builder: SessionBuilder, result: Event, detail: Any) -> None:
    """Enrich a tool result and its call with Claude Code's structured ``toolUseResult``."""
    if not isinstance(detail, dict):
        return
    call = builder.call_for(result.call_id)
    duration = detail.get("totalDurationMs", detail.get("durationMs"))
    if isinstance(duration, int):
        result.duration_ms = duration
    if call is None:
        return
    path = detail.get("filePath")
    if isinstance(path, str):
        call.file_path = call.file_path or path
    diff = patch_diff(short_path(call.file_path or "", builder.session.cwd), detail)
    if diff:
        call.diff = diff


def task_figures(detail: Any) -> dict:
    if not isinstance(detail, dict):
        return {}
    return {f"toolUseResult.{key}": detail[key] for key in TASK_FIGURES if key in detail}


def adopt_task_figures(child: Session, figures: dict) -> None:
    """A subagent's own run figures, as its spawning call's result recorded them."""
    child.cli_figures.update({f"Task result: {key}": value for key, value in figures.items()})
    duration = figures.get("toolUseResult.totalDurationMs")
    if isinstance(duration, int) and not isinstance(duration, bool):
        child.duration_ms = duration


def patch_diff(path: str, detail: dict) -> str | None:
    """A unified diff from ``structuredPatch`` hunks; a created file shows as all added lines."""
    hunks = detail.get("structuredPatch")
    if isinstance(hunks, list) and hunks:
        return structured_patch_text(path, hunks)
    content = detail.get("content")
    if detail.get("type") == "create" and isinstance(content, str):
        lines = content.splitlines()
        hunk = {"oldStart": 0, "oldLines": 0, "newStart": 1, "newLines": len(lines)}
        hunk["lines"] = ["+" + line for line in lines]
        return structured_patch_text(path, [hunk], created=True)
    return None


def arguments_diff(call: Event, cwd: str | None) -> None:
    """A file tool's change drawn from its own arguments, until its result's
    ``structuredPatch`` (which knows the file's line numbers) replaces it: Edit and MultiEdit
    as their old -> new strings, Write as the whole file it wrote."""
    arguments = call.arguments
    if call.tool_name not in FILE_TOOLS or not isinstance(arguments, dict) or not call.file_path:
        return
    path = short_path(call.file_path, cwd)
    if call.tool_name == "Write":
        content = arguments.get("content")
        if isinstance(content, str):
            lines = ["+" + line for line in content.splitlines()]
            header = "whole file written (what it held before is not recorded)"
            call.diff = _loose_diff(path, [(header, lines)])
        return
    edits = arguments.get("edits") if call.tool_name == "MultiEdit" else [arguments]
    hunks = []
    for n, edit in enumerate(edits if isinstance(edits, list) else [], start=1):
        old, new = (edit.get(key) if isinstance(edit, dict) else None for key in STRINGS)
        if isinstance(old, str) and isinstance(new, str):
            changed = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=3)
            lines = [line for line in changed if not line.startswith(("---", "+++", "@@"))]
            hunks.append((f"edit {n} (line numbers not recorded)", lines))
    if hunks:
        call.diff = _loose_diff(path, hunks)


FILE_TOOLS = ("Edit", "MultiEdit", "Write")
STRINGS = ("old_string", "new_string")


def _loose_diff(path: str, hunks: list[tuple[str, list[str]]]) -> str:
    """A unified diff whose hunks say what they are instead of line numbers it cannot know."""
    out = [f"--- a/{path.lstrip('/')}", f"+++ b/{path.lstrip('/')}"]
    for header, lines in hunks:
        out.append(f"@@ {header} @@")
        out.extend(lines)
    return "\n".join(out) + "\n"


def structured_patch_text(path: str, hunks: list, created: bool = False) -> str:
    old_name = "/dev/null" if created else f"a/{path.lstrip('/')}"
    out = [f"--- {old_name}", f"+++ b/{path.lstrip('/')}"]
    for hunk in hunks:
        if not isinstance(hunk, dict):
            continue
        old = f"{as_int(hunk.get('oldStart'))},{as_int(hunk.get('oldLines'))}"
        new = f"{as_int(hunk.get('newStart'))},{as_int(hunk.get('newLines'))}"
        out.append(f"@@ -{old} +{new} @@")
        out.extend(line for line in hunk.get("lines") or [] if isinstance(line, str))
    return "\n".join(out) + "\n"
