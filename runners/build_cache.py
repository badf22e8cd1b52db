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
# Nor Python's bytecode anywhere: the candidate imports solution.py from its source
# (runners.child), and nothing else of it needs any.
BYTECODE = "__pycache__"
# What one entry may hold (a load_inline build is tens of MB): folders past either are not kept.
ENTRY_BYTES = 2 * 2**30
ENTRY_FILES = 20_000


def key(problem_version: str, files: dict[str, str | None], device: str, software: dict) -> str:
    """The entry of a solution: the digests of its graded files (runners.processes.file_digests),
    the problem version, the device and the software (GPU model, torch, CUDA) it builds for."""
    described = {
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
        returns the bytes restored (0: no entry)."""
        source = self.root / entry
        if not source.is_dir():
            return 0
        shutil.copytree(source, cand, dirs_exist_ok=True)  # regular files only, as stored
        total = 0
        for path in source.rglob("*"):
            target = cand / path.relative_to(source)
            os.chown(target, uid, uid)
            total += target.stat().st_size if target.is_file() else 0
        with contextlib.suppress(OSError):
            os.utime(source)  # used now: the last to go
        return total

    def store(self, entry: str, cand: Path, graded: Iterable[str]) -> bool:
        """Keep what the candidate left in its folder `cand` (less the `graded` files) as the
        entry, unless the entry already holds as many bytes (the same files' builds, restored
        and kept) or it breaks a limit; returns whether it was stored. Call only once the
        candidate's processes have ended."""
        skipped = {*graded, *NOT_KEPT}
        size = _walk(cand, skipped, None)
        if size is None or size == 0 or size <= disk_cache.folder_bytes(self.root / entry):
            return False
        staging = self.root / f".staging-{secrets.token_hex(8)}"
        staging.mkdir(mode=0o700)
        try:
            if (
                _walk(cand, skipped, staging) is None
            ):  # grown meanwhile: nothing may still write there
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


def _walk(cand: Path, skipped: set[str], staging: Path | None) -> int | None:
    """The bytes of the regular files in `cand` but the `skipped` paths (relative to it), the
    engine's tensor files at its top and any bytecode, copied into `staging` where given; None
    where they are more than an entry may hold. Links are neither followed nor copied, and
    nothing but folders and regular files is."""
    total = files = 0
    for folder, dirs, names in os.walk(cand, followlinks=False):
        here = Path(folder)
        relative = here.relative_to(cand)
        names = [n for n in names if (relative / n).as_posix() not in skipped]
        if here == cand:
            names = [n for n in names if not n.endswith(ENGINE_SUFFIX)]
        dirs[:] = [
            d
            for d in dirs
            if stat.S_ISDIR(_mode(here / d))
            and (relative / d).as_posix() not in skipped
            and d != BYTECODE
        ]
        target = staging / relative if staging else None
        if target:
            target.mkdir(mode=0o700, exist_ok=True)
        for name in names:
            files += 1
            total += _copy_file(here / name, target / name if target else None)
            if files > ENTRY_FILES or total > ENTRY_BYTES:
                return None
    return total


def _copy_file(source: Path, target: Path | None) -> int:
    """The bytes of `source` if it is a regular file (opened without following a link and
    without waiting on a FIFO), copied to `target` where given; 0 for anything else."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # a link, or gone
        return 0
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return 0
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
