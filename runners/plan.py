"""Which shapes a grading runs, with their seeds and input distributions; and the run folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners import sandbox
from runners.problem import Problem, copy_without_hidden, problem_roots
from runners.solution_files import read_solution

# The Triton interpreter runs one program at a time (milliseconds each): on CPU only held-out
# shapes this small (by the problem's bytes expression) run, those with the smallest largest
# parameter first (a proxy for the launch grid), and at most this many.
CPU_HIDDEN_MAX_BYTES = 256 * 1024
CPU_HIDDEN_MAX_SHAPES = 1
SHM_MIN_FREE_BYTES = 48 * 2**30
SHARED_MEMORY = "/dev/shm"  # noqa: S108 (mkdtemp makes a private 0711 folder inside it)


@dataclass(frozen=True)
class ShapePlan:
    set: str  # visible | hidden | smoke
    index: int
    params: dict[str, int]
    seeds: list[int]
    dists: list[str]
    case: str | None = None

    @property
    def id(self) -> str:
        return f"{self.set}{self.index}"

    @property
    def label(self) -> str:
        """How messages name the shape; held-out parameters never appear in text."""
        if self.set == "hidden":
            return f"held-out case {self.index + 1}"  # counted from 1, as every page does
        return f"{self.set} shape {self.index + 1} {self.params}"

    @property
    def name(self) -> str:
        """How the platform's pages name the shape ("visible 2", "held-out case 4")."""
        if self.set == "hidden":
            return self.label
        return f"{self.set} {self.index + 1}"

    def message(self) -> dict[str, Any]:
        return {"id": self.id, "params": self.params, "seeds": self.seeds, "dists": self.dists}


def _dists(problem: Problem, seeds: list[int]) -> list[str]:
    names = problem.distributions
    return [names[i % len(names)] for i in range(len(seeds))]


def plan_shapes(problem: Problem, device: str) -> tuple[list[ShapePlan], list[ShapePlan]]:
    """(visible, hidden); on CPU the smoke shapes stand in for the visible ones."""
    name, shapes = ("smoke", problem.smoke) if device == "cpu" else ("visible", problem.visible)
    dists = _dists(problem, problem.seeds)
    front = [ShapePlan(name, i, p, problem.seeds, dists) for i, p in enumerate(shapes)]
    seeds, dists = problem.hidden_seeds, _dists(problem, problem.hidden_seeds)
    hidden = [
        ShapePlan("hidden", i, p, seeds, dists, problem.hidden_cases[i])
        for i, p in enumerate(problem.hidden)
    ]
    if device == "cpu":
        small = [h for h in hidden if _cpu_sized(problem, h.params)]
        hidden = sorted(small, key=lambda h: max(h.params.values()))[:CPU_HIDDEN_MAX_SHAPES]
        hidden.sort(key=lambda h: h.index)
    return front, hidden


def _cpu_sized(problem: Problem, params: dict[str, int]) -> bool:
    """Small enough for the CPU: by the bytes expression, or, for a problem without one (the
    speedup regime), no parameter larger than in its largest smoke shape."""
    nbytes = problem.bytes(params)
    if nbytes is not None:
        return nbytes <= CPU_HIDDEN_MAX_BYTES
    return any(all(params[k] <= smoke[k] for k in params) for smoke in problem.smoke)


# A shape's files in the run folder, by kind: the init arguments and the reference state_dict
# are torch.save files, the inputs and expected outputs runners.tensor_file ones.
SHAPE_FILE_SUFFIXES = {"init": ".pt", "state": ".pt", "inputs": ".tensors", "expected": ".tensors"}


def shape_file(kind: str, shape_id: str) -> str:
    """The name of a shape's file of `kind` (in RunFolder.in_dir, expected in ref_dir)."""
    return f"{kind}_{shape_id}{SHAPE_FILE_SUFFIXES[kind]}"


# The modification time of the graded files in the candidate's folder (2000-01-01).
GRADED_FILES_TIME = 946_684_800


class RunFolder:
    """root (0711) holds in/ (inputs the candidate may read), ref/ (expected outputs, root only),
    cand/ (the candidate's private working directory), kept/ (the candidate's timed outputs,
    moved there from cand/ for their re-check, root only) and harness/ (the engine code it
    runs)."""

    def __init__(self, *, uid: int, sandboxed: bool):
        base = SHARED_MEMORY if _roomy(SHARED_MEMORY) else None
        self.uid = uid  # the candidate's, where sandboxed
        self.root = Path(tempfile.mkdtemp(prefix="arena-", dir=base))
        self.root.chmod(0o711)
        self.in_dir = self._mkdir("in", 0o755)
        self.ref_dir = self._mkdir("ref", 0o700)
        self.cand = self._mkdir("cand", 0o700)
        self.oracle_home = self._mkdir("oracle", 0o700)
        self.kept = self._mkdir("kept", 0o700)
        # Where the candidate finds cand/: in the sandbox, at one fixed path (runners.sandbox).
        self.cand_at = sandbox.candidate_path(sandboxed, self.root) or self.cand
        if sandboxed:
            os.chown(self.cand, uid, uid)
        self.harness = self._copy_harness()

    def _mkdir(self, name: str, mode: int) -> Path:
        path = self.root / name
        path.mkdir()
        path.chmod(mode)
        return path

    def _copy_harness(self) -> Path:
        source = Path(__file__).resolve().parent
        target = self.root / "harness" / "runners"
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("problems", "__pycache__"))
        for path in [self.root / "harness", *target.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        return self.root / "harness"

    def add_solution(self, solution: Path, problem: Problem) -> Path:
        """Copy solution.py, or a solution folder's files (runners.solution_files), into cand/,
        read-only: `os.path.dirname(__file__)` there finds the sidecars it builds from."""
        files = read_solution(solution)
        target = files.write(self.cand)
        # One time for the graded files in every grade (their digests key the build cache):
        # ninja rebuilds an object older than its source, and a sidecar written now would be
        # newer than its object kept from an earlier grade (runners.build_cache).
        for name in (target.name, *files.sidecars):
            os.utime(self.cand / name, (GRADED_FILES_TIME, GRADED_FILES_TIME))
        copy_without_hidden(problem, self.cand / "problem")
        (self.cand / "problem").chmod(0o555)
        return target

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _roomy(path: str) -> bool:
    """Inputs and outputs of large shapes take gigabytes; use memory-backed space if it has them."""
    return os.access(path, os.W_OK) and shutil.disk_usage(path).free > SHM_MIN_FREE_BYTES


def masked_paths(problem: Problem) -> list[Path]:
    """Folders the candidate must not read (hidden.yaml lives there); nested ones dropped."""
    paths = [*(root.resolve() for root in problem_roots()), problem.path.resolve()]
    kept: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if path.is_dir() and not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept
