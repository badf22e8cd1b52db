"""What ``arena submit`` sends from a harness run folder.

The layouts the agent CLIs leave (docs/cli.md):

- ``solution.py`` at the top of the folder (required), and the native sources beside it that it
  builds by name (``*.cu``, ``*.cuh``, ``*.h``, ``*.hpp``, ``*.cpp``: ``runners.solution_files``);
- transcripts: every top-level ``*.jsonl`` and ``*.json`` (a Claude Code session
  ``<session-id>.jsonl``, its ``agent-*.jsonl`` beside it, ``claude -p --output-format
  stream-json`` output, a Codex ``rollout-*.jsonl`` or ``codex exec --json`` output, a Gemini CLI
  ``session-*.json``, Cursor, Kimi and opencode stream JSON), plus the ``*.jsonl`` under
  ``subagents/``, ``<session-id>/subagents/`` and a ``transcripts/`` folder;
- ``metadata.json`` (or ``result.json``): agent-reported figures, a JSON object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

METADATA_NAMES = ("metadata.json", "result.json")
NOT_TRANSCRIPTS = {*METADATA_NAMES, "shapes.json", "package.json", "package-lock.json"}
TRANSCRIPT_SUFFIXES = (".jsonl", ".json")


class RunFolderError(Exception):
    """The folder cannot be submitted; the message says what is wrong."""


@dataclass
class RunFolder:
    root: Path
    solution: Path
    transcripts: list[tuple[str, Path]] = field(default_factory=list)  # (name in folder, path)
    metadata: str | None = None
    sidecars: list[Path] = field(default_factory=list)

    def describe(self) -> str:
        names = ", ".join(name for name, _ in self.transcripts)
        meta = " and metadata" if self.metadata else ""
        beside = "".join(f", {path.name}" for path in self.sidecars)
        return f"solution.py{beside}, {len(self.transcripts)} transcript file(s) ({names}){meta}"


def read_run_folder(root: Path) -> RunFolder:
    _check_folder(root)
    solution = root / "solution.py"
    if not solution.is_file():
        raise RunFolderError(
            f"{root}: no solution.py at the top of the folder (the agent's final solution)"
        )
    found = RunFolder(
        root=root, solution=solution, metadata=_metadata(root), sidecars=sidecar_files(root)
    )
    found.transcripts = [(p.relative_to(root).as_posix(), p) for p in transcript_files(root)]
    if not found.transcripts:
        raise RunFolderError(
            f"{root}: no transcript found (*.jsonl or *.json at the top, or under subagents/ "
            "or transcripts/)"
        )
    for path in [*(path for _, path in found.transcripts), *found.sidecars]:
        _check_readable(path)
    return found


def _check_folder(root: Path) -> None:
    if not root.exists():
        raise RunFolderError(f"{root}: no such folder")
    if not root.is_dir():
        raise RunFolderError(f"{root}: not a folder (give the run folder, not a file)")
    try:
        next(root.iterdir(), None)
    except OSError as error:
        raise RunFolderError(f"{root}: cannot read the folder ({error.strerror})") from error


def _check_readable(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except OSError as error:
        raise RunFolderError(f"{path}: cannot read it ({error.strerror})") from error


def sidecar_files(root: Path) -> list[Path]:
    """The native sources beside solution.py; hidden ones (editor and macOS droppings) are left.
    The server checks them by the engine's rules and names any it refuses."""
    from runners.solution_files import SIDECAR_SUFFIXES  # stdlib only; `arena --help` loads none

    return sorted(
        path
        for path in root.iterdir()
        if path.is_file() and path.name.endswith(SIDECAR_SUFFIXES) and not path.name.startswith(".")
    )


def transcript_files(root: Path) -> list[Path]:
    top = [path for path in root.iterdir() if not path.is_dir() and _is_transcript_name(path)]
    nested = [
        *root.glob("subagents/*.jsonl"),
        *root.glob("*/subagents/*.jsonl"),
        *root.glob("transcripts/**/*.json*"),
    ]
    return sorted(set(top) | {p for p in nested if p.is_file()})


def _is_transcript_name(path: Path) -> bool:
    return path.suffix in TRANSCRIPT_SUFFIXES and path.name not in NOT_TRANSCRIPTS


def _metadata(root: Path) -> str | None:
    for name in METADATA_NAMES:
        path = root / name
        if path.is_file():
            return _checked_metadata(path)
    return None


def _checked_metadata(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
        value = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise RunFolderError(f"{path}: not valid JSON ({error})") from error
    if not isinstance(value, dict):
        raise RunFolderError(f"{path}: metadata must be a JSON object")
    return text
