"""Checks on the files of one uploaded run, whether they came loose or in a bundle."""

import hashlib
import json
import math
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.files import File

from runners.contract import (
    MAX_SIDECAR_BYTES,
    MAX_SIDECARS,
    SOLUTION_NAME,
    SolutionFilesError,
    check_sidecars,
)

MAX_NAME_LENGTH = 255
MAX_JSON_DEPTH = 64
_DRIVE_LETTER = re.compile(r"^[A-Za-z]:")


class IntakeError(Exception):
    """An upload the platform refuses; the message is shown to the uploader."""

    status_code = 400


class UploadTooLarge(IntakeError):
    status_code = 413


class UploadConflict(IntakeError):
    """The same files are already a run of this submitter, labelled otherwise (effort or
    metadata): nothing of the new upload is dropped in silence; the earlier run is named."""

    status_code = 409

    def __init__(self, message: str, run) -> None:
        super().__init__(message)
        self.run = run


@dataclass
class IncomingFile:
    name: str  # path inside the run folder, e.g. "subagents/agent-1.jsonl"
    file: File

    @property
    def size(self) -> int:
        return self.file.size


@dataclass
class RunFiles:
    solution: IncomingFile | None
    transcripts: list[IncomingFile]
    metadata: dict[str, Any] = field(default_factory=dict)
    # native sources beside solution.py, by their flat names (runners.solution_files)
    sidecars: list[IncomingFile] = field(default_factory=list)


def safe_relative_name(name: str) -> str:
    """The normalized form of a run-folder path, or IntakeError for one that could escape it."""
    # tar decodes name bytes that are not UTF-8 as lone surrogates
    if not name or not is_storable_text(name) or "\\" in name or len(name) > MAX_NAME_LENGTH:
        raise IntakeError(f"Unacceptable file name {name[:80]!r}.")
    if name.startswith("/") or _DRIVE_LETTER.match(name):
        raise IntakeError(f"Absolute path {name[:80]!r} is not allowed.")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise IntakeError(f"Path {name[:80]!r} leaves the run folder ('..').")
    if not parts:
        raise IntakeError(f"Unacceptable file name {name[:80]!r}.")
    return posixpath.join(*parts)


def check_run_files(files: RunFiles, *, transcript_required: bool = True) -> None:
    """``transcript_required`` off: a run imported from a source that publishes none."""
    if files.solution is not None:
        check_solution(files.solution)
    check_sidecar_files(files)
    if files.transcripts or transcript_required:
        check_transcripts(files.transcripts)


def check_solution(solution: IncomingFile) -> None:
    limit = settings.ARENA_MAX_SOLUTION_BYTES
    if solution.size > limit:
        raise UploadTooLarge(f"The solution is {solution.size} bytes; the limit is {limit}.")
    data = read_all(solution.file)
    if b"\x00" in data:
        raise IntakeError("The solution is a binary file; send Python source text.")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise IntakeError("The solution is not UTF-8 text.") from None


def check_sidecar_files(files: RunFiles) -> None:
    """The engine's rules for files beside solution.py; sizes are checked before any is read."""
    sidecars = files.sidecars
    if not sidecars:
        return
    if files.solution is None:
        raise IntakeError(f"Files beside {SOLUTION_NAME} were sent without {SOLUTION_NAME}.")
    if len(sidecars) > MAX_SIDECARS:
        raise IntakeError(
            f"{len(sidecars)} files beside {SOLUTION_NAME}; the limit is {MAX_SIDECARS}."
        )
    if (total := sum(f.size for f in sidecars)) > MAX_SIDECAR_BYTES:
        limit = MAX_SIDECAR_BYTES
        raise UploadTooLarge(f"Files beside {SOLUTION_NAME}: {total} bytes; the limit is {limit}.")
    names = [f.name for f in sidecars]
    if len(set(names)) != len(names):
        raise IntakeError(f"Two files beside {SOLUTION_NAME} share one name; send each name once.")
    try:
        check_sidecars(sidecar_contents(files))
    except SolutionFilesError as error:
        raise IntakeError(f"Refused: {error.reason}.") from None


def sidecar_contents(files: RunFiles) -> dict[str, bytes]:
    return {f.name: read_all(f.file) for f in files.sidecars}


def check_transcripts(transcripts: list[IncomingFile]) -> None:
    if not transcripts:
        raise IntakeError("No transcript: send at least one transcript file.")
    if len(transcripts) > settings.ARENA_MAX_TRANSCRIPT_FILES:
        limit = settings.ARENA_MAX_TRANSCRIPT_FILES
        raise IntakeError(f"{len(transcripts)} transcript files; the limit is {limit}.")
    names = [safe_relative_name(t.name) for t in transcripts]
    if len(set(names)) != len(names):
        raise IntakeError("Two transcript files share one name; send each name once.")
    if any(t.size == 0 for t in transcripts):
        raise IntakeError("A transcript file is empty.")
    total, limit = sum(t.size for t in transcripts), settings.ARENA_MAX_TRANSCRIPT_BYTES
    if total > limit:
        raise UploadTooLarge(f"Transcripts total {total} bytes; the limit is {limit}.")


def parse_metadata(raw: str | bytes) -> dict[str, Any]:
    """A JSON object of agent-reported metadata; refuses what PostgreSQL's jsonb cannot hold."""
    size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
    if size > settings.ARENA_MAX_METADATA_BYTES:  # bytes, not characters: é is two
        raise UploadTooLarge(f"Metadata exceeds {settings.ARENA_MAX_METADATA_BYTES} bytes.")
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        raise IntakeError(f"Metadata is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise IntakeError("Metadata must be a JSON object.")
    _check_json_value(value, depth=0)
    return value


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not allowed")


def _check_json_value(value: Any, *, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise IntakeError(f"Metadata nests deeper than {MAX_JSON_DEPTH} levels.")
    if isinstance(value, str) and not is_storable_text(value):
        raise IntakeError("Metadata contains a NUL character or a lone surrogate.")
    elif isinstance(value, float) and not math.isfinite(value):
        raise IntakeError("Metadata holds a number too large for JSON storage.")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_json_value(key, depth=depth + 1)
            _check_json_value(item, depth=depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_json_value(item, depth=depth + 1)


def is_storable_text(text: str) -> bool:
    """False for what PostgreSQL refuses and Python lets through: NUL and lone surrogates."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_all(file: File) -> bytes:
    file.seek(0)
    data = file.read()
    file.seek(0)
    return data


def sha256_of(file: File) -> str:
    digest = hashlib.sha256()
    for chunk in file.chunks():
        digest.update(chunk)
    file.seek(0)
    return digest.hexdigest()


# Metadata columns: the first key found wins; dotted keys look into nested objects.
_NUMBER_KEYS = {
    "wall_time_s": ("wall_time_s", "duration_s"),
    "cost_usd": ("cost_usd", "total_cost_usd"),
}
# (keys, exclusive ceiling): turns is an integer column, the token counts are bigint
_COUNT_KEYS = {
    "turns": (("turns", "num_turns"), 2**31),
    "input_tokens": (("input_tokens", "usage.input_tokens"), 2**62),
    "output_tokens": (("output_tokens", "usage.output_tokens"), 2**62),
    "cached_input_tokens": (("cached_input_tokens", "usage.cached_input_tokens"), 2**62),
    "reasoning_tokens": (("reasoning_tokens", "usage.reasoning_output_tokens"), 2**62),
}
_TEXT_KEYS = {
    "cli_version": ("cli_version", "version"),
    "prompt_hash": ("prompt_hash",),
}


def metadata_columns(metadata: dict[str, Any]) -> dict[str, Any]:
    """The columns a run keeps from its metadata; values of the wrong type are left out."""
    columns = {name: _number(_lookup(metadata, keys)) for name, keys in _NUMBER_KEYS.items()}
    if columns["wall_time_s"] is None and _number(metadata.get("duration_ms")) is not None:
        columns["wall_time_s"] = _number(metadata["duration_ms"]) / 1000
    columns |= {
        name: _count(_lookup(metadata, keys), ceiling=ceiling)
        for name, (keys, ceiling) in _COUNT_KEYS.items()
    }
    sources = {name: "metadata" for name, value in columns.items() if value is not None}
    columns |= {name: _text(_lookup(metadata, keys)) for name, keys in _TEXT_KEYS.items()}
    budget = _number(metadata.get("budget_s"))
    columns["budget_s"] = budget if budget else None  # a declared budget, not a figure
    return columns | {"figure_sources": sources}


def _lookup(metadata: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value: Any = metadata
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            return value
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _count(value: Any, *, ceiling: int) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number.is_integer() and number < ceiling else None


def _text(value: Any) -> str:
    return value[:100] if isinstance(value, str) else ""
