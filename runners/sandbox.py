"""Launching the candidate's process: scrubbed environment, private directory, limits, namespaces.

As root with util-linux at hand (the GPU workers and CI), the child runs under
`unshare` (new pid, mount, network, ipc and uts namespaces, a fresh /proc), a small init that
masks the problem folders with empty tmpfs mounts, `prlimit`, and `setpriv` to a run-private uid.
Elsewhere it falls back to rlimits in a new session; `isolation` records what was applied.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_NAMESPACES = ("pid", "mount", "net", "ipc", "uts")
_UNSHARE = ["unshare", "--pid", "--net", "--mount", "--ipc", "--uts", "--fork", "--kill-child"]
_UNSHARE += ["--mount-proc", "--propagation", "private"]
_PR_SET_PDEATHSIG = 1
_UID_BASE = 200_000
_ENV_PASSTHROUGH = ("LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_VISIBLE_DEVICES")
_INIT_FAILED = 97
# In the namespace the candidate's folder is also mounted here (on a tmpfs over /mnt), and the
# candidate runs there: its HOME, its caches and `__file__` are the same paths in every grade.
# ninja rebuilds what it built under another path, and the run folder's path is new each grade,
# so a build kept from an earlier grade of the same files (runners.build_cache) is found only
# where it was built.
MOUNT_BASE = Path("/mnt")
CANDIDATE_PATH = MOUNT_BASE / "arena" / "cand"


@dataclass(frozen=True)
class Limits:
    build_s: float = 300.0  # import, construction and state_dict load (includes JIT builds)
    step_s: float = 180.0  # one shape's correctness calls, first-call compilation included
    timing_margin_s: float = 120.0  # beyond the timing cap, for one shape's timing request
    cpu_s: int = 3600
    data_bytes: int = 32 * 2**30
    # The candidate's outputs of a shape's input sets go to one file: moe_swiglu's largest
    # shape with four input sets writes 4 GiB.
    fsize_bytes: int = 16 * 2**30
    nproc: int = 1024
    nofile: int = 4096

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Capabilities:
    root: bool
    namespaces: bool
    setpriv: bool


@functools.cache
def probe() -> Capabilities:
    """What this machine lets the engine apply; each check is one tiny process."""
    root = os.geteuid() == 0
    namespaces = root and _runs([*_UNSHARE, "--", "true"])
    setpriv = root and _runs(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "true"]
    )
    return Capabilities(
        root=root, namespaces=namespaces, setpriv=setpriv and bool(shutil.which("prlimit"))
    )


def _runs(argv: list[str]) -> bool:
    if not shutil.which(argv[0]):
        return False
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


_runs_started = itertools.count()


def sandbox_uid() -> int:
    """A uid no other run uses now, so RLIMIT_NPROC counts only this candidate's processes."""
    return _UID_BASE + (os.getpid() * 64 + next(_runs_started) % 64) % 6_400_000


def minimal_path() -> str:
    dirs = [str(Path(sys.executable).parent), "/usr/local/cuda/bin", "/usr/local/bin", "/usr/bin"]
    return ":".join([*dict.fromkeys(d for d in [*dirs, "/bin"] if Path(d).is_dir())])


def child_env(home: Path, *, device: str) -> dict[str, str]:
    """An allow-listed environment: nothing of the parent's secrets, caches inside `home`."""
    env = {k: os.environ[k] for k in _ENV_PASSTHROUGH if k in os.environ}
    env.update(
        PATH=minimal_path(),
        HOME=str(home),
        # The sandbox's uid has no passwd entry: getpass.getuser() (torch's and Triton's cache
        # paths) reads these first and would otherwise raise.
        USER="arena",
        LOGNAME="arena",
        TMPDIR=str(home),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        TRITON_CACHE_DIR=str(home / ".triton"),
        TORCH_EXTENSIONS_DIR=str(home / ".torch_extensions"),
        TORCHINDUCTOR_CACHE_DIR=str(home / ".inductor"),
        XDG_CACHE_HOME=str(home / ".cache"),
    )
    if device == "cpu":
        env.update(TRITON_INTERPRET="1", OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    return env


def python_argv(harness: Path, module: str) -> list[str]:
    """`python -I` with only the harness copy on sys.path: no cwd, user site or PYTHONPATH."""
    boot = f"import sys; sys.path.insert(0, {str(harness)!r}); import {module} as m; m.main()"
    return [sys.executable, "-I", "-c", boot]


def candidate_command(
    inner: list[str],
    *,
    limits: Limits,
    uid: int,
    masked: list[Path],
    folder: Path | None = None,
) -> tuple[list[str], dict[str, Any], Any]:
    """The candidate's argv, what it applies (for `isolation`) and a preexec hook (fallback).
    `folder`: the candidate's folder, mounted at CANDIDATE_PATH in the namespace, where it runs
    (`candidate_path`)."""
    caps = probe()
    if caps.namespaces and caps.setpriv:
        init = _init_script(masked, folder)
        argv = [*_UNSHARE, "--", "/bin/sh", "-c", init, "sandbox-init"]
        argv += _prlimit_argv(limits) + _setpriv_argv(uid) + inner
        return argv, _isolation(limits, uid, masked, namespaces=True), _die_with_parent
    isolation = _isolation(limits, os.geteuid(), [], namespaces=False)
    isolation["nproc"] = None
    return inner, isolation, functools.partial(_fallback_limits, limits)


def candidate_path(sandboxed: bool, folder: Path) -> Path | None:
    """Where a sandboxed candidate finds its run `folder`'s cand/ (None: where the engine made
    it). Only where nothing the candidate needs lies under /mnt, which the namespace's tmpfs
    hides: the run folder, the interpreter and its packages, the toolkit, the libraries."""
    if not sandboxed or not MOUNT_BASE.is_dir():
        return None
    needed = [folder, Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix)]
    needed += [Path(p) for p in minimal_path().split(":")]
    needed += [Path(p) for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    needed += [Path(os.environ["CUDA_HOME"])] if os.environ.get("CUDA_HOME") else []
    base = MOUNT_BASE.resolve()
    if any(path.resolve().is_relative_to(base) for path in needed):
        return None
    return CANDIDATE_PATH


def _init_script(masked: list[Path], folder: Path | None = None) -> str:
    """The namespace's init: hide the problem folders, mount the candidate's `folder` at
    CANDIDATE_PATH and enter it, run the candidate, report its status.

    It stays pid 1 (no exec) so a candidate killed by a signal reads as 128 + N, and so that
    killing this init from outside takes every process of the namespace with it.
    """
    mounts = [
        f"mount -t tmpfs -o size=16k,mode=000 arena-mask {shlex.quote(str(p))}" for p in masked
    ]
    if folder is not None:
        fixed = shlex.quote(str(CANDIDATE_PATH))
        mounts += [
            f"mount -t tmpfs -o size=16k,mode=755 arena-mnt {shlex.quote(str(MOUNT_BASE))}",
            f"mkdir -p {fixed}",
            f"mount --bind {shlex.quote(str(folder))} {fixed}",
            f"cd {fixed}",
        ]
    checks = " && ".join(mounts) or "true"
    return f'{checks} || exit {_INIT_FAILED}; "$@"; exit $?'


def _prlimit_argv(limits: Limits) -> list[str]:
    return [
        "prlimit",
        f"--cpu={limits.cpu_s}",
        f"--data={limits.data_bytes}",
        f"--fsize={limits.fsize_bytes}",
        f"--nproc={limits.nproc}",
        f"--nofile={limits.nofile}",
        "--core=0",
        "--",
    ]


def _setpriv_argv(uid: int) -> list[str]:
    return [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def _isolation(limits: Limits, uid: int, masked: list[Path], *, namespaces: bool) -> dict[str, Any]:
    return {
        "sandboxed": namespaces,
        "uid": uid,
        "namespaces": list(_NAMESPACES) if namespaces else [],
        "network": "none (empty network namespace)" if namespaces else "host",
        "masked_paths": [str(p) for p in masked],
        "env": "allow-list",
        "cpu_s": limits.cpu_s,
        "data_bytes": limits.data_bytes,
        "fsize_bytes": limits.fsize_bytes,
        "nproc": limits.nproc,
        "nofile": limits.nofile,
        "wall_clock": {"build_s": limits.build_s, "step_s": limits.step_s},
        "kill": "pid namespace init" if namespaces else "process group",
    }


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _fallback_limits(limits: Limits) -> None:
    _die_with_parent()
    for which, value in (
        (resource.RLIMIT_CPU, limits.cpu_s),
        (resource.RLIMIT_DATA, limits.data_bytes),
        (resource.RLIMIT_FSIZE, limits.fsize_bytes),
        (resource.RLIMIT_NOFILE, limits.nofile),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(which, (value, value))


def init_failed(returncode: int | None) -> bool:
    return returncode == _INIT_FAILED
