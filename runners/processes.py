"""A grade's run folder and its two child processes, the reference and the candidate, started
before the parent imports torch: each child imports torch and sets up the device for 2 to 3 s,
and the parent's own import and device set-up (about 2.5 s on an H200 host) then overlap them
instead of coming first (docs/benchmarks.md, "Cost of a grade", Session 49). Nothing here imports
torch."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners import sandbox
from runners.plan import RunFolder, masked_paths
from runners.problem import Problem
from runners.solution_files import MAX_SIDECAR_BYTES, SOLUTION_NAME, SolutionFiles, read_solution
from runners.workers import Worker


@dataclass
class Started:
    """What `start` made; `runners.gates.Grading` takes it over and closes it."""

    folder: RunFolder
    sandboxed: bool
    # sha256 of each graded file in the candidate's folder, as copied (`file_digests`).
    graded_files: dict[str, str | None]
    oracle: Worker
    candidate: Worker
    # How another candidate process starts (`new_candidate`), and the isolation it gets.
    candidate_command: tuple[list[str], Any]
    isolation: dict[str, Any]

    def close(self) -> None:
        """End both processes and remove the folder (a grade that never got to its gates)."""
        try:
            self.candidate.close()
            self.oracle.close()
        finally:
            self.folder.remove()


def start(problem: Problem, solution: Path, device: str, limits: sandbox.Limits) -> Started:
    """The run folder with the solution copied in, the reference process and the sandboxed
    candidate process, both starting (neither waited for)."""
    uid = sandbox.sandbox_uid()
    caps = sandbox.probe()
    sandboxed = caps.namespaces and caps.setpriv
    folder = RunFolder(uid=uid, sandboxed=sandboxed)
    try:
        copied = folder.add_solution(solution, problem)
        graded = file_digests(copied.parent, read_solution(solution))
        oracle = Worker(
            sandbox.python_argv(folder.harness, "runners.oracle"),
            env=sandbox.child_env(cache_home(), device=device),
            cwd=folder.oracle_home,
            log_path=folder.root / "reference.log",
        )
    except BaseException:
        folder.remove()
        raise
    try:
        inner = sandbox.python_argv(folder.harness, "runners.child")
        seen = folder.cand_at / copied.relative_to(folder.cand)  # where the candidate runs
        inner += ["--solution", str(seen), "--device", device]
        argv, isolation, preexec = sandbox.candidate_command(
            inner,
            limits=limits,
            uid=uid,
            masked=masked_paths(problem),
            folder=folder.cand if folder.cand_at != folder.cand else None,
        )
        candidate = new_candidate((argv, preexec), folder, device)
    except BaseException:
        oracle.close()
        folder.remove()
        raise
    return Started(folder, sandboxed, graded, oracle, candidate, (argv, preexec), isolation)


def new_candidate(command: tuple[list[str], Any], folder: RunFolder, device: str) -> Worker:
    """A candidate process: it starts the interpreter and imports torch and the harness, then
    waits for its first request (the solution is imported at `build`)."""
    argv, preexec = command
    return Worker(
        argv,
        env=sandbox.child_env(folder.cand_at, device=device),
        cwd=folder.cand,
        log_path=folder.root / "candidate.log",
        preexec_fn=preexec,
    )


def file_digests(folder: Path, files: SolutionFiles) -> dict[str, str | None]:
    """sha256 of solution.py and each sidecar as they are in `folder` (None: gone)."""
    digests = {}
    for name in (SOLUTION_NAME, *files.sidecars):
        try:
            digests[name] = _regular_file_digest(folder / name)
        except OSError:
            digests[name] = None
    return digests


def _regular_file_digest(path: Path) -> str | None:
    """The candidate owns the folder: a link or a FIFO in place of the file is a change (read,
    it could hang the parent or fill its memory), as is a file grown past the upload limit."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SIDECAR_BYTES:
            return None
        return hashlib.file_digest(handle, "sha256").hexdigest()


def cache_home() -> Path:
    """Where the reference process keeps compile caches between gradings (trusted code only)."""
    home = Path(os.environ.get("KERNEL_ARENA_CACHE", Path.home() / ".cache" / "kernel-arena"))
    home.mkdir(parents=True, exist_ok=True)
    return home
