"""Every version of one file (``solution.py``) that an agent wrote, rebuilt from a parsed session.

Pure: reads a ``Session`` and nothing else. A version is the file's full text after a tool call
that changed it: whole-file writes (Claude Write, Gemini write_file, opencode write), string
replacements (Edit, MultiEdit, replace, StrReplaceFile, opencode edit), Codex ``apply_patch``
envelopes, shell heredocs (``cat > solution.py <<'EOF'``) and, failing those, the unified diff the
parser attached. A change whose result the transcript does not pin down (an edit of a file never
seen whole, ``sed -i``, a Codex ``file_change`` without content) is a version with ``content``
None: the chain is broken there until the next whole-file write.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from transcripts.model import Event, Kind, Session, parse_timestamp
from transcripts.parsers.formats import ToolArguments, tool_arguments

_HEREDOC = re.compile(
    r"""cat\s+(?:>\s*(?P<out1>[^\s<;&|]+)\s*<<-?\s*(?P<q1>['"]?)(?P<tag1>\w+)(?P=q1)"""
    r"""|<<-?\s*(?P<q2>['"]?)(?P<tag2>\w+)(?P=q2)\s*>\s*(?P<out2>[^\s;&|]+))[^\n]*\n"""
)
_WRITING_TOOL = re.compile(r"write|edit|patch|replace|file_change", re.IGNORECASE)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Version:
    index: int
    path: str
    content: str | None  # None: the file changed, but the transcript does not say how exactly
    sha256: str | None
    tool: str
    how: str  # write | edit | patch | shell | diff | opaque
    event_id: str
    turn: int  # API calls made up to this change
    output_tokens: int  # tokens generated up to this change
    wall_s: float | None  # seconds since the session started
    note: str = ""


@dataclass
class Lineage:
    target: str
    versions: list[Version] = field(default_factory=list)

    @property
    def final(self) -> Version | None:
        return self.versions[-1] if self.versions else None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class FinalCheck:
    """How the last rebuilt version compares with the uploaded solution."""

    status: str  # match | differs | unknown (last version not rebuilt) | none (never written)
    message: str

    @property
    def mismatch(self) -> bool:
        return self.status != "match"


def rebuild_lineage(session: Session, *, target: str = "solution.py") -> Lineage:
    lineage = Lineage(target=target)
    failed = _failed_calls(session)
    clock = _Clock(session)
    state: str | None = None
    names = tool_arguments(session.format)
    for event in _in_order(session):
        clock.see(event)
        if event.kind != Kind.TOOL_CALL or event.call_id in failed:
            continue
        change = _change(event, target, state, names)
        if change is None:
            continue
        how, content, note = change
        state = content
        path = _path_of(event, names) or target
        _append(lineage, event, clock, path=path, how=how, content=content, note=note)
    return lineage


def check_final(lineage: Lineage, solution: str | None) -> FinalCheck:
    final = lineage.final
    if final is None:
        return FinalCheck("none", f"the transcript never writes {lineage.target}")
    if final.content is None:
        return FinalCheck("unknown", f"the last change to {lineage.target} cannot be rebuilt")
    if solution is None or _normalized(final.content) != _normalized(solution):
        return FinalCheck(
            "differs",
            f"the last version the transcript writes differs from the uploaded {lineage.target}",
        )
    return FinalCheck("match", "the last version is the uploaded solution")


def _normalized(text: str) -> str:
    return text.replace("\r\n", "\n").rstrip("\n")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class _Clock:
    """Turns, generated tokens and wall time, as of the event last seen."""

    def __init__(self, session: Session) -> None:
        self.start = parse_timestamp(session.started_at)
        self.turn = self.tokens = 0
        self.now = None

    def see(self, event: Event) -> None:
        if event.usage is not None:
            self.turn += 1
            self.tokens += event.usage.output
        moment = parse_timestamp(event.timestamp)
        if moment is not None:
            self.start = self.start or moment
            self.now = moment

    def wall_s(self) -> float | None:
        if self.start is None or self.now is None:
            return None
        return round((self.now - self.start).total_seconds(), 3)


def _append(
    lineage: Lineage, event: Event, clock: _Clock, *, path: str, how, content, note
) -> None:
    digest = sha256_text(content) if content is not None else None
    last = lineage.final
    if last is not None and digest is not None and last.sha256 == digest:
        return  # rewritten unchanged: not a new version
    lineage.versions.append(
        Version(
            index=len(lineage.versions),
            path=path,
            content=content,
            sha256=digest,
            tool=event.tool_name or "",
            how=how,
            event_id=event.id,
            turn=clock.turn,
            output_tokens=clock.tokens,
            wall_s=clock.wall_s(),
            note=note,
        )
    )


def _in_order(session: Session) -> Iterator[Event]:
    """Events as they happened: a subagent's events right after the call that spawned it."""
    for event in session.events:
        yield event
        for child in event.children:
            yield from _in_order(child)


def _failed_calls(session: Session) -> set[str]:
    return {
        event.call_id
        for _, part in session.walk()
        for event in part.events
        if event.kind == Kind.TOOL_RESULT and event.is_error and event.call_id
    }


Change = tuple[str, str | None, str]  # (how, content or None, note)


def _change(event: Event, target: str, state: str | None, names: ToolArguments) -> Change | None:
    arguments = event.arguments
    patch = _patch_text(arguments)
    if patch is not None:
        return _patched(patch, target, state)
    command = _command_text(arguments, names)
    if command is not None:
        return _shell(command, target)
    if not matches(_path_of(event, names), target):
        return None
    if isinstance(arguments, dict):
        for rule in (_whole_write, _replacements, _multi_edit):
            change = rule(arguments, state, names)
            if change is not None:
                return change
    if event.diff:
        return _from_diff(event.diff, state)
    if _WRITING_TOOL.search(event.tool_name or ""):
        return "opaque", None, f"{event.tool_name} changed the file without its content"
    return None  # a read, a search


def matches(path: str | None, target: str) -> bool:
    if not path:
        return False
    path = path.replace("\\", "/")
    return path == target or path.endswith("/" + target)


def _path_of(event: Event, names: ToolArguments) -> str | None:
    if event.file_path:
        return event.file_path
    arguments = event.arguments
    if isinstance(arguments, dict):
        for key in names.paths:
            if isinstance(arguments.get(key), str):
                return arguments[key]
    return None


def _whole_write(arguments: dict, state: str | None, names: ToolArguments) -> Change | None:
    if any(old in arguments for old, _ in names.replacements):
        return None
    for key in names.contents:
        if isinstance(arguments.get(key), str):
            return "write", arguments[key], ""
    return None


def _replacements(arguments: dict, state: str | None, names: ToolArguments) -> Change | None:
    for old_key, new_key in names.replacements:
        old, new = arguments.get(old_key), arguments.get(new_key)
        if isinstance(old, str) and isinstance(new, str):
            return _replace(state, old, new, every=_replace_all(arguments))
    return None


def _multi_edit(arguments: dict, state: str | None, names: ToolArguments) -> Change | None:
    edits = arguments.get("edits")
    if not isinstance(edits, list):
        return None
    for edit in edits:
        change = _replacements(edit, state, names) if isinstance(edit, dict) else None
        if change is None or change[1] is None:
            return "edit", None, "a MultiEdit step could not be applied"
        state = change[1]
    return "edit", state, ""


def _replace_all(arguments: dict) -> bool:
    count = arguments.get("expected_replacements")
    wanted = arguments.get("replace_all", arguments.get("replaceAll"))
    return bool(wanted) or (isinstance(count, int) and count > 1)


def _replace(state: str | None, old: str, new: str, *, every: bool) -> Change:
    if state is None:
        if old == "":
            return "edit", new, ""  # an empty old string creates the file
        return "edit", None, "edit of a file whose earlier content the transcript does not show"
    if old not in state:
        return "edit", None, "the edit's old text is not in the rebuilt file"
    return "edit", state.replace(old, new) if every else state.replace(old, new, 1), ""


# Codex apply_patch ---------------------------------------------------------------------------


def _patch_text(arguments: Any) -> str | None:
    if isinstance(arguments, str):
        return arguments if "*** Begin Patch" in arguments else None
    if isinstance(arguments, dict):
        for key in ("input", "patch", "command", "cmd"):
            found = _patch_text(arguments.get(key))
            if found is not None:
                return found
    if isinstance(arguments, list):
        return next((p for p in map(_patch_text, arguments) if p is not None), None)
    return None


def _patched(patch: str, target: str, state: str | None) -> Change | None:
    change = None
    for path, action, body in _patch_sections(patch):
        if matches(path, target):
            change = _apply_section(action, body, state)
            state = change[1]
    return change


def _patch_sections(patch: str) -> Iterator[tuple[str, str, list[str]]]:
    section: tuple[str, str, list[str]] | None = None
    for line in patch.splitlines():
        header = re.match(r"^\*\*\* (Add|Update|Delete) File: (.+)$", line)
        if header:
            if section:
                yield section
            section = (header.group(2).strip(), header.group(1), [])
        elif line.startswith("*** Move to: ") and section:
            section = (line[len("*** Move to: ") :].strip(), section[1], section[2])
        elif line.startswith("*** End Patch"):
            break
        elif section is not None:
            section[2].append(line)
    if section:
        yield section


def _apply_section(action: str, body: list[str], state: str | None) -> Change:
    if action == "Add":
        return "patch", "".join(line[1:] + "\n" for line in body if line.startswith("+")), ""
    if action == "Delete":
        return "patch", None, "apply_patch deleted the file"
    if state is None:
        return "patch", None, "patch of a file whose earlier content the transcript does not show"
    lines = state.splitlines()
    cursor = 0
    for old, new in _patch_chunks(body):
        at = _find(lines, old, cursor)
        if at is None:
            return "patch", None, "a patch chunk does not match the rebuilt file"
        lines[at : at + len(old)] = new
        cursor = at + len(new)
    return "patch", "\n".join(lines) + "\n", ""


def _patch_chunks(body: list[str]) -> Iterator[tuple[list[str], list[str]]]:
    old: list[str] = []
    new: list[str] = []
    for line in body:
        if line.startswith("@@") or line == "*** End of File":
            if old or new:
                yield old, new
            old, new = [], []
            continue
        sign, text = (line[:1], line[1:]) if line else (" ", "")
        if sign in (" ", "-"):
            old.append(text)
        if sign in (" ", "+"):
            new.append(text)
    if old or new:
        yield old, new


def _find(lines: list[str], block: list[str], start: int) -> int | None:
    if not block:
        return len(lines)
    for begin in (*range(start, len(lines) - len(block) + 1), *range(0, start)):
        if lines[begin : begin + len(block)] == block:
            return begin
    stripped = [line.rstrip() for line in block]
    for begin in range(0, len(lines) - len(block) + 1):
        if [line.rstrip() for line in lines[begin : begin + len(block)]] == stripped:
            return begin
    return None


# shell -----------------------------------------------------------------------------------------


def _command_text(arguments: Any, names: ToolArguments) -> str | None:
    if not isinstance(arguments, dict):
        return None
    for key in names.commands:
        value = arguments.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(part, str) for part in value):
            return (
                value[-1] if len(value) >= 3 and value[-2] in ("-c", "-lc") else shlex.join(value)
            )
    return None


def _shell(command: str, target: str) -> Change | None:
    written = None
    for match in _HEREDOC.finditer(command):
        out = match.group("out1") or match.group("out2")
        tag = match.group("tag1") or match.group("tag2")
        body = _heredoc_body(command[match.end() :], tag)
        if matches(out.strip("'\""), target) and body is not None:
            written = ("shell", body, "")
    if written is not None:
        return written
    if _writes_target(command, target):
        return "opaque", None, "a shell command changed the file"
    return None


def _heredoc_body(rest: str, tag: str) -> str | None:
    lines = rest.split("\n")
    for end, line in enumerate(lines):
        if line.strip() == tag:
            return "".join(text + "\n" for text in lines[:end])
    return None


def _writes_target(command: str, target: str) -> bool:
    """A statement that writes the target: ``> solution.py``, ``tee``, ``sed -i``, ``cp a
    solution.py``; ``cat solution.py`` or ``cp solution.py b`` only read it."""
    for statement in re.split(r"[;&|\n]+", command):
        words = statement.split()
        if target not in statement or not words:
            continue
        if re.search(r">>?\s*['\"]?\S*" + re.escape(target), statement):
            return True
        if words[0] in ("tee", "patch") or (words[0] == "sed" and "-i" in words):
            return True
        if words[0] in ("cp", "mv") and words[-1].strip("'\"").endswith(target):
            return True
    return False


# unified diffs ---------------------------------------------------------------------------------


def _from_diff(diff: str, state: str | None) -> Change:
    lines = diff.splitlines()
    if any(line.startswith("--- /dev/null") for line in lines[:2]):
        state = ""
    if state is None:
        return "diff", None, "diff of a file whose earlier content the transcript does not show"
    result = state.splitlines()
    offset = 0
    for start, old, new in _diff_hunks(lines):
        at = max(start - 1, 0) + offset
        if result[at : at + len(old)] != old:
            return "diff", None, "a diff hunk does not match the rebuilt file"
        result[at : at + len(old)] = new
        offset += len(new) - len(old)
    return "diff", "\n".join(result) + "\n" if result else "", ""


def _diff_hunks(lines: list[str]) -> Iterator[tuple[int, list[str], list[str]]]:
    start, old, new = None, [], []
    for line in lines:
        header = _HUNK.match(line)
        if header:
            if start is not None:
                yield start, old, new
            start, old, new = int(header.group(1)), [], []
        elif start is not None and line[:1] in (" ", "-", "+"):
            if line[:1] in (" ", "-"):
                old.append(line[1:])
            if line[:1] in (" ", "+"):
                new.append(line[1:])
    if start is not None:
        yield start, old, new
