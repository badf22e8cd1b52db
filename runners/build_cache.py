"""What the candidate builds, kept between grades of the same solution files.

A solution that builds native code (`torch.utils.cpp_extension.load_inline`: nvcc under ninja),
Triton kernels or torch.compile graphs does so in every grade, since its caches and build folders
live in the candidate's folder, which goes with the grade: hy3's top-k spent 22 to 34 s of each
re-grade in nvcc (docs/benchmarks.md, "Cost of a grade"). Here what a grade leaves in that folder
(every file but the graded ones, the problem's copy and the engine's tensor files) is kept per
solution, and a later grade of the same files (same problem version, device model and software)
starts with it in place.

It is the candidate's own work, and only a grade of the very same files reads it back (the key
holds their digests): no solution can put anything in another's way, and a solution gains nothing
it could not compute in its own process (the timed calls' inputs are drawn per round and never
repeat). The parent copies it out after every candidate process of the grade has ended, regular
files only (no link is followed or kept), and keeps nothing over `ENTRY_BYTES` or `ENTRY_FILES`.
As with the reference cache, only sandboxed grades read or write it: without a sandbox the
candidate runs as the engine's user and could write the cache itself.

ninja rebuilds what it built under another path, and a run folder's path is new each grade: in
the sandbox the candidate's folder is mounted at one fixed path where it runs
(`runners.sandbox.CANDIDATE_PATH`), so its builds land at the same paths every grade. Each entry
is staged under a temporary name and renamed into place whole; the least recently used go once
the cache is over its size (`KERNEL_ARENA_BUILD_CACHE_GB`, 0 turns it off).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from runners import disk_cache

DEFAULT_GB = 16.0
# What in the candidate's folder is never kept, besides the graded files: the problem's copy
# (runners.plan.RunFolder.add_solution) and the engine's tensor files (outputs, timed outputs).
NOT_KEPT = ("problem",)
ENGINE_SUFFIX = ".tensors"
# Nor Python's bytecode anywhere (the candidate imports solution.py from its source,
# runners.child), nor a build's lock: torch waits for as long as its build folder holds a file
# of this name, which a process killed in the middle of a build leaves.
NEVER_KEPT = ("__pycache__", "lock")
# What one entry may hold (a load_inline build is tens of MB): folders past either are not kept.
# Each file and folder counts for at least a block of the disk, so that empty ones add up.
ENTRY_BYTES = 2 * 2**30
ENTRY_FILES = 20_000
ENTRY_DEPTH = 32  # folders below the candidate's
BLOCK_BYTES = 4096
# Bumped when what an entry holds changes: entries of another format are never read.
FORMAT = 1


def key(problem_version: str, files: dict[str, str | None], device: str, software: dict) -> str:
    """The entry of a solution: the digests of its graded files (runners.processes.file_digests),
    the problem version, the device and the software it builds with (GPU model, driver, torch,
    CUDA, Triton)."""
    described = {
        "format": FORMAT,
        "files": files,
        "problem": problem_version,
        "device": device,
        "software": software,
        "python": sys.version,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:40]


class BuildCache:
    def __init__(self, root: Path, max_bytes: int):
        self.root, self.max_bytes = root, max_bytes

    @classmethod
    def under(cls, home: Path) -> BuildCache | None:
        """The cache in the engine's cache home, sized by the environment; None when off."""
        sized = disk_cache.sized_root(home, "builds", "KERNEL_ARENA_BUILD_CACHE_GB", DEFAULT_GB)
        return cls(*sized) if sized else None

    def restore(self, entry: str, cand: Path, uid: int) -> int:
        """Copy the entry into the candidate's folder `cand`, owned by the candidate's `uid`;
        returns the bytes restored (0: no entry, or none restored). Call before any code of the
        candidate has run there: the copy is made as the engine's user. Copied beside the
        folder's files first and moved in whole, so an entry that goes meanwhile (another
        grade's trim) leaves nothing half copied."""
        source = self.root / entry
        if not source.is_dir():
            return 0
        with contextlib.suppress(OSError):
            os.utime(source)  # used now: the last to go
        staging = cand / f".arena-restore-{secrets.token_hex(8)}"
        try:
            shutil.copytree(source, staging)  # regular files and folders only, as stored
            total = 0
            for path in [staging, *staging.rglob("*")]:
                os.chown(path, uid, uid)
                total += path.stat().st_size if path.is_file() else 0
            for path in staging.iterdir():
                target = cand / path.name
                if not target.exists():  # never a graded file: an entry holds none
                    path.rename(target)
            return total
        except OSError:  # the entry went while it was copied: a miss
            return 0
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def store(self, entry: str, cand: Path, graded: Iterable[str], uid: int) -> bool:
        """Keep what the candidate (`uid`) left in its folder `cand`, less the `graded` files,
        as the entry, unless the entry already holds as much (the same files' builds, restored
        and kept) or it breaks a limit; returns whether it was stored. Call once the grade's
        candidate processes have been ended."""
        skipped = {*graded, *NOT_KEPT}
        size = _walk(cand, skipped, uid, None)
        if size is None or size == 0 or size <= (_walk(self.root / entry, set(), None, None) or 0):
            return False
        staging = self.root / f".staging-{secrets.token_hex(8)}"
        try:
            staging.mkdir(mode=0o700)
            if _walk(cand, skipped, uid, staging) is None:  # grown since: not kept
                return False
            old = self.root / f".old-{secrets.token_hex(8)}"
            with contextlib.suppress(FileNotFoundError):
                (self.root / entry).rename(old)
            staging.rename(self.root / entry)
            shutil.rmtree(old, ignore_errors=True)
            return True
        except OSError:  # another grade's entry won the rename, or the disk is full
            return False
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def trim(self) -> None:
        """Keep the cache to its size (runners.disk_cache.trim)."""
        disk_cache.trim(self.root, self.max_bytes)


def _walk(top: Path, skipped: set[str], uid: int | None, staging: Path | None) -> int | None:
    """What an entry of `top`'s files would take: the bytes of its regular files (each a block
    at least, and a block per folder), but the `skipped` paths (relative to it), the engine's
    tensor files at its top and the NEVER_KEPT names anywhere, copied into `staging` where
    given; 0 where there is no such file; None where that is more than an entry may hold (or
    deeper), or `top` is not a folder. Only regular files of `uid` (where given) with a single
    link are counted or copied: no link is followed, and a file hard-linked from elsewhere is
    left. `os.fwalk` opens each folder
    without following links, relative to its parent's descriptor, so a folder swapped for a
    link meanwhile is not entered."""
    if not stat.S_ISDIR(_mode(top)):
        return None
    total = files = regular = 0
    for folder, dirs, names, folder_fd in os.fwalk(top, follow_symlinks=False):
        relative = Path(folder).relative_to(top)
        files += 1
        total += BLOCK_BYTES
        if len(relative.parts) > ENTRY_DEPTH or files > ENTRY_FILES:
            return None
        kept = [(relative / d).as_posix() not in skipped and d not in NEVER_KEPT for d in dirs]
        dirs[:] = [d for d, keep in zip(dirs, kept, strict=True) if keep]
        names = [
            n
            for n in names
            if (relative / n).as_posix() not in skipped
            and n not in NEVER_KEPT
            and not (relative == Path(".") and n.endswith(ENGINE_SUFFIX))
        ]
        target = staging / relative if staging else None
        if target:
            target.mkdir(mode=0o700, exist_ok=True)
        for name in names:
            size = _copy_file(folder_fd, name, uid, target / name if target else None)
            if size is None:
                continue
            files += 1
            regular += 1
            total += max(size, BLOCK_BYTES)
            if files > ENTRY_FILES or total > ENTRY_BYTES:
                return None
    return total if regular else 0


def _copy_file(folder_fd: int, name: str, uid: int | None, target: Path | None) -> int | None:
    """The bytes of `name` in the folder open as `folder_fd`, copied to `target` where given;
    None unless it is a regular file of `uid` (where given) with one link. It is opened without
    following a link or waiting on a FIFO, and checked once open."""
    try:
        info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode):  # nothing but regular files is opened
            return None
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    except OSError:  # gone
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return None
        if uid is not None and info.st_uid != uid:
            return None
        if target is not None and info.st_size <= ENTRY_BYTES:
            with open(target, "xb") as out:
                shutil.copyfileobj(handle, out, length=2**20)
            os.chmod(target, stat.S_IMODE(info.st_mode) & 0o755)
            # ninja rebuilds what is older than its sources: the times go with the files.
            os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
        return info.st_size


def _mode(path: Path) -> int:
    try:
        return path.lstat().st_mode
    except OSError:
        return 0
