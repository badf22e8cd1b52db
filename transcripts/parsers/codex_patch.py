"""Diff text for Codex file edits.

``patch_apply_end`` events carry a real unified diff per file; when only the model-written
``apply_patch`` input exists (its hunks have no line numbers), it is turned into diff text
best-effort: file headers plus the hunks as written.
"""

from __future__ import annotations

from typing import Any

from transcripts.parsers.common import short_path

_ADD, _DELETE, _UPDATE, _MOVE = (
    "*** Add File: ",
    "*** Delete File: ",
    "*** Update File: ",
    "*** Move to: ",
)


def _header(old: str | None, new: str | None) -> list[str]:
    return [f"--- a/{old}" if old else "--- /dev/null", f"+++ b/{new}" if new else "+++ /dev/null"]


def changes_diff(changes: Any, cwd: str | None = None) -> tuple[str | None, str | None]:
    """(diff text, first path) from ``patch_apply_end.changes`` (path -> type, diff or content)."""
    if not isinstance(changes, dict):
        return None, None
    parts = []
    for path, change in changes.items():
        change = change if isinstance(change, dict) else {}
        kind, moved = change.get("type"), change.get("move_path")
        moved = moved if isinstance(moved, str) else None
        old = None if kind == "add" else short_path(path, cwd)
        new = None if kind == "delete" else short_path(moved or path, cwd)
        body = change.get("unified_diff")
        if not isinstance(body, str) and isinstance(change.get("content"), str):
            lines = change["content"].splitlines()
            sign = "-" if kind == "delete" else "+"
            span = f"-1,{len(lines)} +0,0" if kind == "delete" else f"-0,0 +1,{len(lines)}"
            body = "\n".join([f"@@ {span} @@", *(sign + line for line in lines)])
        parts.append("\n".join([*_header(old, new), (body or "").rstrip("\n")]))
    first = next(iter(changes), None)
    return ("\n".join(parts) + "\n" if parts else None), first


def apply_patch_diff(patch: Any) -> tuple[str | None, str | None]:
    """(diff text, first path) from an ``apply_patch`` envelope; (None, None) if it is not one."""
    if not isinstance(patch, str) or "*** Begin Patch" not in patch:
        return None, None
    out: list[str] = []
    first, added_at = None, None
    for line in patch.splitlines():
        path = _file_path(line)
        if path is not None:
            _count_added(out, added_at)
            first = first or path
            out += _file_header(line, path)
            added_at = len(out) - 1 if line.startswith(_ADD) else None
        elif line.startswith(_MOVE) and out:
            out[-1] = f"+++ b/{line[len(_MOVE) :]}"
        elif line.startswith("@@") or (line[:1] in ("+", "-", " ") and out):
            out.append(line)
    _count_added(out, added_at)
    return ("\n".join(out) + "\n" if out else None), first


def _count_added(out: list[str], added_at: int | None) -> None:
    """An added file's hunk header gets its line count once the file's lines are read."""
    if added_at is not None:
        out[added_at] = f"@@ -0,0 +1,{len(out) - added_at - 1} @@"


def _file_path(line: str) -> str | None:
    for prefix in (_ADD, _DELETE, _UPDATE):
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    return None


def _file_header(line: str, path: str) -> list[str]:
    if line.startswith(_ADD):
        return [*_header(None, path), "@@ -0,0 +1 @@"]
    if line.startswith(_DELETE):
        return _header(path, None)
    return _header(path, path)
