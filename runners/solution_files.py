"""A solution's files: `solution.py` and the native sources beside it (its sidecars).

Agents build CUDA with `torch.utils.cpp_extension.load(sources=[os.path.join(
os.path.dirname(__file__), "kernel.cu")])`, so a solution may be a folder: `solution.py` and
files it reads by name. Only native sources may sit beside it: a second `.py` would be imported
without passing the static gate, and anything else is not a kernel. Names are flat and plain, so
that no name can leave the candidate's folder or hide in it.

Stdlib only: the platform checks uploads with these same rules and writes the same folder.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runners.schema import Verdict

SOLUTION_NAME = "solution.py"
SIDECAR_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".cpp")
MAX_SIDECARS = 16
MAX_SIDECAR_BYTES = 1024 * 1024  # all sidecars together
MAX_NAME_LENGTH = 100
# Letters, digits, "_", "-" and ".", not starting with "." (hidden) or "-" (an option to a tool).
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
# A published solution with its sidecars appended, each after a block of three comment lines:
# a frame of "=", the marker naming the file and its length in characters, a frame; then a blank
# line and the text. The solution and each text end where the next block's "\n\n" begins.
_FRAME = r"# =+\n"
_BLOCK = re.compile(
    rf"\n\n{_FRAME}# ===== sidecar: (?P<name>[^\n]*?) \((?P<size>\d+) bytes, loaded by "
    rf"solution\.py\) =====\n{_FRAME}\n"
)
# The canonical encoding that identifies a folder's content (see content_sha256).
_CONTENT_HEADER = b"kernel-arena solution files 1\n"


class SolutionFilesError(ValueError):
    """A solution the engine will not grade as given; `verdict` is a runners.schema.Verdict."""

    def __init__(self, verdict: str, reason: str, name: str = ""):
        super().__init__(reason)
        self.verdict, self.reason, self.name = verdict, reason, name


@dataclass(frozen=True)
class SolutionFiles:
    source: Path  # solution.py
    sidecars: dict[str, bytes]  # name -> content, checked by check_sidecars

    @property
    def sidecar_texts(self) -> dict[str, str]:
        return {name: data.decode("utf-8") for name, data in self.sidecars.items()}

    def write(self, folder: Path) -> Path:
        """Copy solution.py and the sidecars into `folder`, read-only; returns solution.py there."""
        return write_solution_folder(folder, self.source.read_bytes(), self.sidecars, mode=0o444)


def read_solution(path: Path) -> SolutionFiles:
    """The files of a solution given as `solution.py` (no sidecars) or as a folder holding it;
    SolutionFilesError names the first file that breaks a rule."""
    path = Path(path)
    if path.is_dir():
        return _read_folder(path)
    if path.is_file():
        return SolutionFiles(path, {})
    raise SolutionFilesError(Verdict.MISSING_SOLUTION, f"no solution file at {path.name}")


def _read_folder(folder: Path) -> SolutionFiles:
    source = folder / SOLUTION_NAME
    entries = sorted(folder.iterdir())
    for entry in entries:
        if entry.is_symlink():
            raise SolutionFilesError(
                Verdict.FORBIDDEN, f"{entry.name} is a symbolic link", entry.name
            )
        if not entry.is_file():
            raise SolutionFilesError(
                Verdict.FORBIDDEN, f"{entry.name} is not a plain file", entry.name
            )
    if source not in entries:
        raise SolutionFilesError(
            Verdict.MISSING_SOLUTION, f"no {SOLUTION_NAME} in the folder {folder.name}"
        )
    others = [entry for entry in entries if entry != source]
    _check_amount(len(others), sum(entry.stat().st_size for entry in others))  # before reading
    sidecars = {entry.name: entry.read_bytes() for entry in others}
    check_sidecars(sidecars)
    return SolutionFiles(source, sidecars)


def check_sidecars(sidecars: Mapping[str, bytes]) -> None:
    """The count, total size, names and encoding rules; SolutionFilesError names the file."""
    _check_amount(len(sidecars), sum(len(data) for data in sidecars.values()))
    for name, data in sidecars.items():
        check_sidecar_name(name)
        _check_text(name, data)


def _check_amount(count: int, total: int) -> None:
    if count > MAX_SIDECARS:
        raise SolutionFilesError(
            Verdict.FORBIDDEN, f"{count} files beside {SOLUTION_NAME}; at most {MAX_SIDECARS}"
        )
    if total > MAX_SIDECAR_BYTES:
        raise SolutionFilesError(
            Verdict.FORBIDDEN,
            f"the files beside {SOLUTION_NAME} total {total} bytes; at most {MAX_SIDECAR_BYTES}",
        )


def check_sidecar_name(name: str) -> None:
    """A flat, plain name with a native-source suffix."""
    shown = repr(name[:MAX_NAME_LENGTH])
    if len(name) > MAX_NAME_LENGTH or not _PLAIN_NAME.fullmatch(name):
        raise SolutionFilesError(
            Verdict.FORBIDDEN,
            f"file name {shown} beside {SOLUTION_NAME}: use letters, digits, '_', '-' and '.' "
            f"(no folders, not hidden, at most {MAX_NAME_LENGTH} characters)",
            name,
        )
    if not name.endswith(SIDECAR_SUFFIXES):
        raise SolutionFilesError(
            Verdict.FORBIDDEN,
            f"file {shown} beside {SOLUTION_NAME}: only native sources may sit there "
            f"({', '.join(SIDECAR_SUFFIXES)}); Python code belongs in {SOLUTION_NAME}",
            name,
        )


def _check_text(name: str, data: bytes) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise SolutionFilesError(Verdict.FORBIDDEN, f"{name} is not UTF-8 text", name) from None
    if b"\x00" in data:
        raise SolutionFilesError(
            Verdict.FORBIDDEN, f"{name} holds a NUL byte; send source text", name
        )


def content_sha256(source: bytes, sidecars: Mapping[str, bytes]) -> str:
    """What identifies a solution's content: sha256 of solution.py alone when it has no
    sidecars (the hash single-file solutions always had), else of a canonical encoding of every
    name, length and content in name order, so identical folders share one hash."""
    if not sidecars:
        return hashlib.sha256(source).hexdigest()
    digest = hashlib.sha256(_CONTENT_HEADER)
    for name, data in sorted({SOLUTION_NAME: source, **sidecars}.items()):
        digest.update(f"{name}\n{len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()


def split_sidecars(text: str) -> tuple[str, dict[str, str]]:
    """A published solution text with its sidecars appended after marker blocks, split into
    solution.py's source and {name: text}. Each marker's length must match its text (in
    characters or UTF-8 bytes), so a truncated or re-wrapped publication is refused, not graded
    as something else; names follow check_sidecar_name."""
    blocks = list(_BLOCK.finditer(text))
    if not blocks:
        return text, {}
    sidecars: dict[str, str] = {}
    for block, after in zip(blocks, [*blocks[1:], None], strict=True):
        name = block["name"]
        body = text[block.end() : after.start() if after else len(text)]
        if int(block["size"]) not in (len(body), len(body.encode("utf-8"))):
            raise SolutionFilesError(
                Verdict.FORBIDDEN,
                f"sidecar {name!r}: the marker says {block['size']}, the text has "
                f"{len(body)} characters",
                name,
            )
        if name in sidecars:
            raise SolutionFilesError(Verdict.FORBIDDEN, f"sidecar {name!r} appears twice", name)
        sidecars[name] = body
    check_sidecars({name: body.encode("utf-8") for name, body in sidecars.items()})
    return text[: blocks[0].start()], sidecars


def write_solution_folder(
    folder: Path,
    source: str | bytes,
    sidecars: Mapping[str, str | bytes],
    *,
    mode: int = 0o644,
) -> Path:
    """Write solution.py and its sidecars into `folder` (made if missing); returns solution.py
    there. The sidecars are checked first: no name can land outside `folder`."""
    files = {name: _bytes(data) for name, data in sidecars.items()}
    check_sidecars(files)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in {SOLUTION_NAME: _bytes(source), **files}.items():
        (folder / name).write_bytes(data)
        (folder / name).chmod(mode)
    return folder / SOLUTION_NAME


def _bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data
