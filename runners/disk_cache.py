"""What the engine's caches on a worker's disk share (runners.reference_cache, the reference's
inputs and outputs; runners.build_cache, each solution's builds): a folder under the engine's
cache home, sized by an environment variable, whose entries are folders staged under a name
starting with "." and renamed into place whole, the least recently used going first."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from pathlib import Path

# What a grade that died while storing left staged is removed after this long.
STALE_STAGING_S = 3600.0


def sized_root(home: Path, name: str, variable: str, default_gb: float) -> tuple[Path, int] | None:
    """The cache folder `name` under `home` (made 0700) and its size in bytes from the
    environment's `variable` (GiB, `default_gb` where unset); None where it is 0 (turned off)."""
    raw = os.environ.get(variable, str(default_gb))
    try:
        size = float(raw)
    except ValueError:
        raise ValueError(f"{variable}={raw!r}: expected a number of GiB (0: off)") from None
    if size <= 0:
        return None
    root = home / name
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root, int(size * 2**30)


def trim(root: Path, max_bytes: int) -> None:
    """Remove the least recently used entries of `root` until the rest fit in `max_bytes`, and
    what a grade that died while storing left staged over STALE_STAGING_S ago."""
    entries = []
    for path in root.iterdir():
        if path.name.startswith("."):
            with contextlib.suppress(OSError):
                if time.time() - path.lstat().st_mtime > STALE_STAGING_S:
                    shutil.rmtree(path, ignore_errors=True)
            continue
        with contextlib.suppress(OSError):  # removed by another grade meanwhile
            entries.append((path.stat().st_mtime, folder_bytes(path), path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        shutil.rmtree(path, ignore_errors=True)
        total -= size


def folder_bytes(folder: Path) -> int:
    """The bytes of the regular files under `folder` (0: none there)."""
    total = 0
    for path in folder.rglob("*") if folder.is_dir() else []:
        with contextlib.suppress(OSError):
            info = path.lstat()
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total
