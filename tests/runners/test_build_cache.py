"""What the candidate builds, kept between grades of the same files (runners.build_cache): a
re-grade of a load_inline solution finds its build where it was built and ninja runs nothing;
another solution finds nothing; a grade that fails keeps nothing; what is copied out of the
candidate's folder is its own regular files within the limits, never a link, a hard link, a
graded file, the problem's copy, bytecode or a build's lock. The real engine on the CPU, in the
sandbox."""

import os
import stat
import time

import pytest
from engine_support import FAST_LIMITS, RUNTIME, TINY, run_bounded

from runners import build_cache
from runners.build_cache import BuildCache
from runners.evaluate import evaluate
from runners.sandbox import Limits, probe
from runners.schema import Verdict

NINJA_LOG = ".torch_extensions/arena_scaled_tanh/.ninja_log"


# Writes a file beside itself, as a build does, and answers wrong.
FAILING = """
from pathlib import Path

import torch
import torch.nn as nn

(Path(__file__).resolve().parent / "build").mkdir(exist_ok=True)
(Path(__file__).resolve().parent / "build" / "kernel.bin").write_bytes(b"0" * 64)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x):
        return torch.zeros_like(x)
"""


def grade(solution):
    # A load_inline build takes half a minute on two cores: the build step has the time.
    limits = Limits(**{**FAST_LIMITS, "build_s": 300.0})
    path = solution if isinstance(solution, os.PathLike) else RUNTIME / f"{solution}.py"
    return run_bounded(evaluate, TINY, path, device="cpu", limits=limits)


def restored(result) -> int:
    return result.gate("build").details.get("builds_restored_bytes", 0)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Two grades of the load_inline solution, then one of another solution, on one cache."""
    caps = probe()
    if not (caps.namespaces and caps.setpriv):
        pytest.skip("the cache is used by sandboxed grades only, and this machine has no sandbox")
    home = tmp_path_factory.mktemp("cache-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNEL_ARENA_CACHE", str(home))
        first = grade("honest_load_inline")
        (entry,) = (home / "builds").iterdir()
        log_after_first = (entry / NINJA_LOG).read_text()
        second = grade("honest_load_inline")
        other = grade("honest")
        failing = tmp_path_factory.mktemp("failing") / "solution.py"
        failing.write_text(FAILING)
        failed = grade(failing)
    return home, entry, log_after_first, first, second, other, failed


def test_a_second_grade_of_the_same_files_finds_its_build(graded):
    home, entry, log_after_first, first, second, *_ = graded

    assert first.verdict == second.verdict == Verdict.OK, (first.reason, second.reason)
    assert restored(first) == 0
    assert restored(second) > 0
    # ninja ran no command in the second grade: its log is the first grade's.
    assert (entry / NINJA_LOG).read_text() == log_after_first
    assert (entry / ".torch_extensions/arena_scaled_tanh/arena_scaled_tanh.so").is_file()
    assert [p.name for p in (home / "builds").iterdir()] == [entry.name]


def test_another_solution_finds_no_build(graded):
    *_, other, _ = graded

    assert other.verdict == Verdict.OK, other.reason
    assert restored(other) == 0


def test_a_grade_that_fails_keeps_nothing(graded):
    """It may have left a build half done (a process killed in the middle of it)."""
    home, entry, *_, failed = graded

    assert failed.verdict == Verdict.INCORRECT, failed.reason
    assert [p.name for p in (home / "builds").iterdir()] == [entry.name]


GRADED = ("solution.py", "csrc/kernel.cu")
BUILT = {".triton/ab/kernel.cubin", ".triton/ab/kernel.json"}
UID = os.getuid()  # the candidate's, here: the test's files are its own


@pytest.fixture
def cand(tmp_path):
    """A candidate's folder as a grade leaves it: a Triton cache of two files beside the graded
    files, the problem's copy, an outputs file of the engine's and bytecode."""
    folder = tmp_path / "cand"
    (folder / ".triton" / "ab").mkdir(parents=True)
    (folder / ".triton" / "ab" / "kernel.cubin").write_bytes(b"\x7fELF" + b"0" * 60)
    (folder / ".triton" / "ab" / "kernel.json").write_text('{"name": "kernel"}')
    (folder / "csrc").mkdir()
    for name in GRADED:
        (folder / name).write_text("# graded: never kept\n")
    (folder / "problem").mkdir()
    (folder / "problem" / "reference.py").write_text("# the problem's: never kept\n")
    (folder / "out_v0.tensors").write_bytes(b"0" * 100)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "solution.cpython-311.pyc").write_bytes(b"0" * 100)
    (folder / ".torch_extensions" / "ext").mkdir(parents=True)
    (folder / ".torch_extensions" / "ext" / "lock").write_bytes(b"")  # a build killed midway
    return folder


@pytest.fixture
def cache(tmp_path):
    root = tmp_path / "builds"
    root.mkdir()
    return BuildCache(root, max_bytes=2**20)


def entry_files(cache: BuildCache, entry: str) -> set[str]:
    root = cache.root / entry
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_store_keeps_what_the_candidate_built_and_its_times(cand, cache):
    old = time.time() - 3600
    os.utime(cand / ".triton" / "ab" / "kernel.cubin", (old, old))

    assert cache.store("e1", cand, GRADED, UID)
    assert entry_files(cache, "e1") == BUILT
    kept = cache.root / "e1" / ".triton" / "ab" / "kernel.cubin"
    assert abs(kept.stat().st_mtime - old) < 1  # ninja compares them with its sources


def test_store_follows_and_keeps_no_link_and_reads_no_fifo(cand, cache, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("the engine's")
    (cand / ".triton" / "ab" / "link").symlink_to(secret)
    (cand / ".triton" / "dirlink").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(cand / ".triton" / "ab" / "fifo")

    assert cache.store("e1", cand, GRADED, UID)
    assert entry_files(cache, "e1") == BUILT
    assert not any(p.is_symlink() for p in (cache.root / "e1").rglob("*"))


def test_a_folder_that_is_a_link_is_not_followed(tmp_path, cache):
    cand = tmp_path / "cand"
    cand.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "big").write_bytes(b"x" * 100)
    (cand / ".triton").symlink_to(tmp_path / "elsewhere", target_is_directory=True)

    assert not cache.store("e1", cand, GRADED, UID)
    assert not (cache.root / "e1").exists()


def test_only_the_candidates_own_files_with_one_link_are_kept(cand, cache, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("the engine's")
    os.link(secret, cand / ".triton" / "ab" / "hardlink")  # where hard links are allowed
    (cand / ".triton" / "ab" / "foreign").write_text("another user's")
    os.chown(cand / ".triton" / "ab" / "foreign", UID + 4242, UID + 4242)

    assert cache.store("e1", cand, GRADED, UID)
    assert entry_files(cache, "e1") == BUILT


def test_folders_count_toward_the_limits(cand, cache, monkeypatch):
    """Empty folders cost the disk a block each: thousands of them are not kept."""
    for index in range(30):
        (cand / "empty" / str(index)).mkdir(parents=True)
    monkeypatch.setattr(build_cache, "ENTRY_FILES", 20)
    assert not cache.store("e1", cand, GRADED, UID)
    monkeypatch.setattr(build_cache, "ENTRY_FILES", 100)
    deep = cand / "deep"
    deep.mkdir()
    for _ in range(build_cache.ENTRY_DEPTH + 1):
        deep = deep / "d"
        deep.mkdir()
    assert not cache.store("e1", cand, GRADED, UID)
    assert list(cache.root.iterdir()) == []


def test_what_passes_the_limits_is_not_kept(cand, cache, monkeypatch):
    monkeypatch.setattr(build_cache, "ENTRY_FILES", 1)
    assert not cache.store("e1", cand, GRADED, UID)
    monkeypatch.setattr(build_cache, "ENTRY_FILES", 100)
    monkeypatch.setattr(build_cache, "ENTRY_BYTES", 10)
    assert not cache.store("e1", cand, GRADED, UID)
    assert list(cache.root.iterdir()) == []  # no staging left behind


def test_an_entry_is_replaced_only_by_more(cand, cache):
    assert cache.store("e1", cand, GRADED, UID)
    assert not cache.store("e1", cand, GRADED, UID)  # restored and kept as it was: nothing to copy
    (cand / ".inductor").mkdir()
    (cand / ".inductor" / "graph.py").write_text("# a graph compiled in the re-grade\n")

    assert cache.store("e1", cand, GRADED, UID)
    assert ".inductor/graph.py" in entry_files(cache, "e1")
    assert [p.name for p in cache.root.iterdir()] == ["e1"]


def test_restore_gives_the_candidate_its_files(cand, cache, tmp_path):
    cache.store("e1", cand, GRADED, UID)
    fresh = tmp_path / "fresh"
    fresh.mkdir()

    size = cache.restore("e1", fresh, uid=4242)

    assert size == 64 + len('{"name": "kernel"}')
    assert {str(p.relative_to(fresh)) for p in fresh.rglob("*") if p.is_file()} == BUILT
    for path in [fresh / ".triton", *(fresh / ".triton").rglob("*")]:
        assert path.stat().st_uid == 4242  # the candidate writes there (ninja's log, locks)
    assert cache.restore("missing", fresh, uid=4242) == 0


def test_an_entry_that_goes_while_restored_restores_nothing(cand, cache, tmp_path, monkeypatch):
    cache.store("e1", cand, GRADED, UID)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    copytree = build_cache.shutil.copytree

    def copy(*args, **kwargs):  # another grade's trim, once the first file is copied
        build_cache.shutil.copy2(*args, **kwargs)
        build_cache.shutil.rmtree(cache.root / "e1", ignore_errors=True)

    def trimmed_meanwhile(source, target, *args, **kwargs):
        if args:  # copytree's own recursion, with the copy function given
            return copytree(source, target, *args, **kwargs)
        return copytree(source, target, copy_function=copy, **kwargs)

    monkeypatch.setattr(build_cache.shutil, "copytree", trimmed_meanwhile)

    assert cache.restore("e1", fresh, uid=4242) == 0
    assert list(fresh.iterdir()) == []


def test_trim_drops_the_least_recently_used(cand, cache):
    cache.max_bytes = 100
    cache.store("old", cand, GRADED, UID)
    os.utime(cache.root / "old", (1, 1))
    cache.store("new", cand, GRADED, UID)
    stale = cache.root / ".staging-left"
    stale.mkdir()
    os.utime(stale, (1, 1))

    cache.trim()

    assert sorted(p.name for p in cache.root.iterdir()) == ["new"]


def test_the_key_names_the_files_the_problem_and_the_software():
    files = {"solution.py": "a" * 64}
    software = {"gpu": "NVIDIA H100", "torch": "2.11"}
    base = build_cache.key("v1", files, "cuda", software)

    assert base == build_cache.key("v1", dict(files), "cuda", dict(reversed(software.items())))
    assert base != build_cache.key("v1", {"solution.py": "b" * 64}, "cuda", software)
    assert base != build_cache.key("v2", files, "cuda", software)
    assert base != build_cache.key("v1", files, "cuda", {**software, "gpu": "NVIDIA H200"})


def test_the_size_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_ARENA_BUILD_CACHE_GB", "0")
    assert BuildCache.under(tmp_path) is None
    monkeypatch.setenv("KERNEL_ARENA_BUILD_CACHE_GB", "lots")
    with pytest.raises(ValueError, match="KERNEL_ARENA_BUILD_CACHE_GB='lots'"):
        BuildCache.under(tmp_path)
    monkeypatch.setenv("KERNEL_ARENA_BUILD_CACHE_GB", "1")
    cache = BuildCache.under(tmp_path)
    assert cache.max_bytes == 2**30 and stat.S_IMODE(cache.root.stat().st_mode) == 0o700


def test_the_candidate_runs_at_a_fixed_path_only_where_mnt_holds_nothing_it_needs(
    tmp_path, monkeypatch
):
    from runners import sandbox

    monkeypatch.setattr(sandbox, "MOUNT_BASE", tmp_path / "mnt")
    elsewhere = tmp_path / "runs" / "arena-1"
    assert sandbox.candidate_path(True, elsewhere) is None  # no such folder to mount over
    (tmp_path / "mnt").mkdir()
    assert sandbox.candidate_path(True, elsewhere) == sandbox.CANDIDATE_PATH
    assert sandbox.candidate_path(False, elsewhere) is None
    assert sandbox.candidate_path(True, tmp_path / "mnt" / "arena-1") is None  # hidden there
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "mnt" / "cuda"))
    assert sandbox.candidate_path(True, elsewhere) is None


def test_the_graded_files_have_one_time_in_every_grade(tmp_path):
    """ninja rebuilds an object older than its source: a sidecar written at each grade's start
    would be newer than the object kept from an earlier grade."""
    from runners.plan import GRADED_FILES_TIME, RunFolder
    from runners.problem import load_problem

    solution = tmp_path / "submitted"
    solution.mkdir()
    (solution / "solution.py").write_text("# loads kernel.cu beside it\n")
    (solution / "kernel.cu").write_text("// a kernel\n")
    folder = RunFolder(uid=UID, sandboxed=False)
    try:
        folder.add_solution(solution, load_problem(TINY))
        for name in ("solution.py", "kernel.cu"):
            assert (folder.cand / name).stat().st_mtime == GRADED_FILES_TIME
    finally:
        folder.remove()
