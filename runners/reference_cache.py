"""Reference inputs and expected outputs kept on the worker's disk between grades.

A shape's inputs, init arguments, reference `state_dict` and expected outputs depend only on the
problem folder, the shape (parameters, seeds, input distributions), the device model, the
software that computed them and the engine's own code (`runners.oracle` and what it uses), so
the first grade of a problem on a worker computes them and every later one copies them. On the
H100 the reference process spent 3 to 22 s a grade on them (docs/benchmarks.md, "Cost of a
grade").

Each entry is a folder named by the digest of all of that (`key`), written under a temporary name
and renamed into place whole, so a grade never reads half an entry; the least recently used
entries go once the cache is over its size (`KERNEL_ARENA_REFERENCE_CACHE_GB`, 0 turns it off).
The cache lives under the reference process's own home (`KERNEL_ARENA_CACHE`, 0700): the
candidate reads its copies in the run folder, never the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from runners import disk_cache
from runners.plan import SHAPE_FILE_SUFFIXES, shape_file

DEFAULT_GB = 64.0
# A shape's files are copied side by side, COPY_THREADS at once over all shapes (each file by one
# kernel copy: writes into one file of shared memory take its lock in turn, so pieces of a file do
# not copy faster side by side): one copy from the disk's page cache into shared memory ran at
# about 2.3 GB/s on an H200 host, and softmax's largest shape has two files of 3.3 GB, which a
# re-grade copied one after the other (docs/benchmarks.md, "Cost of a grade", Session 49).
COPY_THREADS = 8
_pool = ThreadPoolExecutor(COPY_THREADS, thread_name_prefix="reference-copy")  # threads on use
# Where each of a shape's files goes in the run folder (runners.plan.RunFolder), by its name in
# an entry, and who may read it there: the candidate reads in/, never ref/.
# Named in an entry by kind and suffix (runners.plan.SHAPE_FILE_SUFFIXES).
FILES = {"init": ("in_dir", 0o644), "state": ("in_dir", 0o644), "inputs": ("in_dir", 0o644)}
FILES["expected"] = ("ref_dir", 0o600)
# What the reference process computes them with (runners.oracle and every engine module it
# reads problems, inputs and models through): any change to the engine is a new key.
ENGINE = Path(__file__).resolve().parent


def keys(
    problem_version: str, shapes: list[dict[str, Any]], device: str, software: dict[str, Any]
) -> list[str]:
    """The entry of each shape: `shapes` are the plans' messages (their ids left out: a shape
    under another id is the same entry), `software` the GPU model, processor, torch and CUDA
    versions the files were computed with. The engine's code is read once for all of them."""
    common = {
        "engine": engine_digest(),
        "problem": problem_version,
        "device": device,
        "software": software,
    }
    return [
        hashlib.sha256(
            json.dumps(
                {**common, "shape": {k: v for k, v in shape.items() if k != "id"}},
                sort_keys=True,
            ).encode()
        ).hexdigest()[:40]
        for shape in shapes
    ]


def engine_digest() -> str:
    """sha256 over the engine's own modules (the problem deck left out)."""
    digest = hashlib.sha256()
    for path in sorted(ENGINE.rglob("*.py")):
        relative = path.relative_to(ENGINE)
        if relative.parts[0] != "problems":
            digest.update(relative.as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _entry_name(kind: str) -> str:
    """A file's name in an entry: its kind and suffix, shared by every shape."""
    return f"{kind}{SHAPE_FILE_SUFFIXES[kind]}"


class ReferenceCache:
    def __init__(self, root: Path, max_bytes: int):
        self.root, self.max_bytes = root, max_bytes

    @classmethod
    def under(cls, home: Path) -> ReferenceCache | None:
        """The cache in the reference process's home, sized by the environment; None when
        turned off."""
        sized = disk_cache.sized_root(
            home, "references", "KERNEL_ARENA_REFERENCE_CACHE_GB", DEFAULT_GB
        )
        return cls(*sized) if sized else None

    def restore(self, entries: dict[str, str], folder: Any) -> set[str]:
        """Copy each shape's entry (shape id: entry) into the run folder under the shape's
        names, every file of every shape side by side; returns the shapes restored. A shape
        whose entry is missing or goes while it is copied (another worker's eviction) leaves
        nothing behind."""
        pending = {}
        for shape_id, entry in entries.items():
            source = self.root / entry
            files = [
                (source / _entry_name(name), getattr(folder, where) / shape_file(name, shape_id))
                for name, (where, _) in FILES.items()
            ]
            pending[shape_id] = (source, files, _copy(files))
        restored = set()
        for shape_id, (source, files, copies) in pending.items():
            try:
                failed = _failed(copies)
                if failed is not None:
                    raise failed
                for (_, target), (_, mode) in zip(files, FILES.values(), strict=True):
                    target.chmod(mode)
                os.utime(source)  # used now: the last to go
            except OSError:
                for _, target in files:
                    target.unlink(missing_ok=True)
                continue
            restored.add(shape_id)
        return restored

    def store(self, entry: str, folder: Any, shape_id: str) -> None:
        """Keep the shape's files the reference process just wrote (`trim` then keeps the cache
        to its size). An entry another grade stored meanwhile is kept as it is; one larger than
        a quarter of the cache is not kept (it would push out the rest at every grade)."""
        written = {
            _entry_name(name): getattr(folder, where) / shape_file(name, shape_id)
            for name, (where, _) in FILES.items()
        }
        if (self.root / entry).is_dir():
            return
        if sum(path.stat().st_size for path in written.values()) > self.max_bytes / 4:
            return
        staging = self.root / f".staging-{secrets.token_hex(8)}"
        staging.mkdir(mode=0o700)
        try:
            failed = _failed(_copy([(path, staging / name) for name, path in written.items()]))
            if failed is not None:
                raise failed
            staging.rename(self.root / entry)
        except OSError:  # another grade's entry won the rename, or the disk is full
            shutil.rmtree(staging, ignore_errors=True)

    def trim(self) -> None:
        """Keep the cache to its size (runners.disk_cache.trim)."""
        disk_cache.trim(self.root, self.max_bytes)


def _copy(files: list[tuple[Path, Path]]) -> list[Future]:
    """Start copying each (source, target) on the copying threads; returns their futures."""
    return [_pool.submit(shutil.copyfile, source, target) for source, target in files]


def _failed(copies: list[Future]) -> BaseException | None:
    """The first failure among `copies`, once every one of them ended."""
    errors = [copy.exception() for copy in copies]
    return next((error for error in errors if error is not None), None)
