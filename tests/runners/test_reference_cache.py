"""The worker's disk cache of reference inputs and expected outputs (runners.reference_cache):
a second grade of a problem copies what the first computed and grades the same; another problem
version, shape or device is another entry; the cache keeps to its size. The real engine on the
CPU."""

import dataclasses
import os
import shutil
import time

import pytest
from engine_support import FAST_LIMITS, RUNTIME, TINY, run_bounded

from runners import disk_cache, reference_cache
from runners.evaluate import evaluate
from runners.plan import SHAPE_FILE_SUFFIXES, shape_file
from runners.reference_cache import ReferenceCache
from runners.sandbox import Limits
from runners.schema import Verdict


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "cache-home"
    monkeypatch.setenv("KERNEL_ARENA_CACHE", str(home))
    return home


@pytest.fixture
def sandboxed():
    """Only sandboxed grades use the cache (runners.gates.Grading._prepare_references)."""
    from runners import sandbox

    caps = sandbox.probe()
    if not (caps.namespaces and caps.setpriv):
        pytest.skip("the cache is used by sandboxed grades only, and this machine has no sandbox")


def grade(problem=TINY):
    return run_bounded(
        evaluate, problem, RUNTIME / "honest.py", device="cpu", limits=Limits(**FAST_LIMITS)
    )


def cached(result) -> str:
    return result.gate("build").details["references_cached"]


def test_a_second_grade_copies_the_references_and_grades_the_same(cache_home, sandboxed):
    first = grade()
    second = grade()

    assert cached(first) == "0 of 2" and cached(second) == "2 of 2"
    assert first.verdict == second.verdict == Verdict.OK
    errors = [
        [(s.correct, s.max_abs_err, s.max_rel_err) for s in r.shapes] for r in (first, second)
    ]
    assert errors[0] == errors[1]  # the same expected outputs, compared the same
    entries = list((cache_home / "references").iterdir())
    assert len(entries) == 2
    assert {p.name for p in entries[0].iterdir()} == {
        f"{name}{SHAPE_FILE_SUFFIXES[name]}" for name in reference_cache.FILES
    }


def test_a_changed_problem_is_computed_again(cache_home, sandboxed, tmp_path):
    problem = tmp_path / "tiny_tanh"
    shutil.copytree(TINY, problem)
    grade(problem)
    with (problem / "reference.py").open("a") as handle:
        handle.write("\n# a new version of the problem\n")

    assert cached(grade(problem)) == "0 of 2"
    assert len(list((cache_home / "references").iterdir())) == 4


def key(version, shape, device, software) -> str:
    (entry,) = reference_cache.keys(version, [shape], device, software)
    return entry


def test_the_key_names_the_problem_version_shape_device_and_software():
    shape = {"id": "visible0", "params": {"N": 8}, "seeds": [0, 1], "dists": ["normal"] * 2}
    software = {"gpu": "NVIDIA H100 80GB HBM3", "cpu": "x86_64", "torch": "2.11.0", "cuda": "12.8"}
    base = key("v1", shape, "cuda", software)

    assert key("v1", {**shape, "id": "hidden3"}, "cuda", software) == base
    assert key("v2", shape, "cuda", software) != base
    assert key("v1", {**shape, "params": {"N": 16}}, "cuda", software) != base
    assert key("v1", {**shape, "seeds": [0, 2]}, "cuda", software) != base
    assert key("v1", {**shape, "dists": ["large"] * 2}, "cuda", software) != base
    assert key("v1", shape, "cpu", software) != base
    assert key("v1", shape, "cuda", {**software, "torch": "2.12.0"}) != base
    assert key("v1", shape, "cuda", {**software, "cpu": "aarch64"}) != base
    other = {**shape, "params": {"N": 16}}
    both = reference_cache.keys("v1", [shape, other], "cuda", software)
    assert both == [base, key("v1", other, "cuda", software)]


def test_any_change_to_the_engine_is_a_new_key(tmp_path, monkeypatch):
    engine = tmp_path / "runners"
    (engine / "problems" / "softmax").mkdir(parents=True)
    (engine / "oracle.py").write_text("# the recipe\n")
    monkeypatch.setattr(reference_cache, "ENGINE", engine)
    shape = {"params": {"N": 8}, "seeds": [0], "dists": ["normal"]}
    before = key("v1", shape, "cuda", {})

    (engine / "problems" / "softmax" / "reference.py").write_text("# the problem version's\n")
    assert key("v1", shape, "cuda", {}) == before
    (engine / "timing.py").write_text("# a module the recipe uses\n")
    assert key("v1", shape, "cuda", {}) != before


def test_turned_off_nothing_is_kept(cache_home, monkeypatch):
    monkeypatch.setenv("KERNEL_ARENA_REFERENCE_CACHE_GB", "0")
    grade()

    assert cached(grade()) == "0 of 2"
    assert not (cache_home / "references").exists()


def test_a_size_that_is_not_a_number_is_refused_with_the_variable_named(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_ARENA_REFERENCE_CACHE_GB", "lots")
    with pytest.raises(ValueError, match="KERNEL_ARENA_REFERENCE_CACHE_GB='lots'"):
        ReferenceCache.under(tmp_path)


class Folder:
    def __init__(self, root):
        self.in_dir, self.ref_dir = root / "in", root / "ref"
        self.in_dir.mkdir(parents=True)
        self.ref_dir.mkdir()

    def write(self, shape_id: str, size: int) -> None:
        for name, (where, _) in reference_cache.FILES.items():
            (getattr(self, where) / shape_file(name, shape_id)).write_bytes(b"x" * size)


def one_entry(tmp_path) -> tuple[ReferenceCache, Folder]:
    """A cache holding "entry" (a shape's files from one run folder), and another run folder."""
    cache = ReferenceCache(tmp_path / "cache", 10**9)
    cache.root.mkdir()
    source = Folder(tmp_path / "a")
    source.write("visible0", 10)
    cache.store("entry", source, "visible0")
    return cache, Folder(tmp_path / "b")


def test_an_entry_that_goes_while_it_is_copied_leaves_nothing_behind(tmp_path):
    cache, target = one_entry(tmp_path)
    (cache.root / "entry" / "expected.tensors").unlink()  # evicted halfway by another worker

    assert cache.restore({"visible0": "entry"}, target) == set()
    assert not list(target.in_dir.iterdir()) and not list(target.ref_dir.iterdir())
    assert cache.restore({"visible0": "missing"}, target) == set()


def test_restored_files_are_readable_by_the_candidate_only_in_in_dir(tmp_path):
    cache, target = one_entry(tmp_path)

    assert cache.restore({"hidden2": "entry"}, target) == {"hidden2"}
    assert (target.in_dir / "inputs_hidden2.tensors").stat().st_mode & 0o777 == 0o644
    assert (target.ref_dir / "expected_hidden2.tensors").stat().st_mode & 0o777 == 0o600


def test_an_entry_larger_than_a_quarter_of_the_cache_is_not_kept(tmp_path):
    cache = ReferenceCache(tmp_path / "cache", max_bytes=4 * 4 * 100)
    cache.root.mkdir()
    folder = Folder(tmp_path / "run")
    folder.write("visible0", 101)  # four files of 101 bytes: over 400

    cache.store("entry", folder, "visible0")

    assert not list(cache.root.iterdir())


def test_the_least_recently_used_entries_go_once_the_cache_is_over_its_size(tmp_path):
    cache = ReferenceCache(tmp_path / "cache", max_bytes=10**9)
    cache.root.mkdir()
    folder = Folder(tmp_path / "run")
    folder.write("visible0", 100)
    now = time.time()
    for age, entry in enumerate(["new", "used", "old"]):
        cache.store(entry, folder, "visible0")
        os.utime(cache.root / entry, (now - 100 * age, now - 100 * age))
    os.utime(cache.root / "used", (now + 10, now + 10))  # restored lately
    stale = cache.root / ".staging-dead"
    stale.mkdir()
    os.utime(stale, (now - 2 * disk_cache.STALE_STAGING_S,) * 2)

    cache.max_bytes = 2 * 4 * 100  # two entries of four 100-byte files
    cache.trim()

    assert sorted(p.name for p in cache.root.iterdir()) == ["new", "used"]


def test_the_copy_into_the_cache_ends_before_anything_is_timed(cache_home, sandboxed, monkeypatch):
    """Sandboxed, the copy runs beside the correctness gates; the performance gate waits."""
    from runners import performance

    events = []
    store, timing_round = ReferenceCache.store, performance.Performance._round

    def slow_store(self, *args):
        time.sleep(0.5)
        store(self, *args)
        events.append("stored")

    def timed(self, *args):
        events.append("timed")
        return timing_round(self, *args)

    monkeypatch.setattr(ReferenceCache, "store", slow_store)
    monkeypatch.setattr(performance.Performance, "_round", timed)

    assert grade().verdict == Verdict.OK
    assert events == ["stored", "stored", "timed"]


def test_without_a_sandbox_the_cache_is_neither_read_nor_written(cache_home, monkeypatch):
    """The candidate then shares the parent's uid: it could write into the cache itself."""
    from runners import sandbox

    probe = sandbox.probe()
    monkeypatch.setattr(sandbox, "probe", lambda: dataclasses.replace(probe, namespaces=False))

    assert cached(grade()) == cached(grade()) == "0 of 2"
    assert not (cache_home / "references").exists()


def test_shapes_copied_side_by_side_are_restored_each_whole_or_not_at_all(tmp_path):
    cache, target = one_entry(tmp_path)
    shutil.copytree(cache.root / "entry", cache.root / "broken")
    (cache.root / "broken" / "inputs.tensors").unlink()

    restored = cache.restore({"visible0": "entry", "hidden1": "broken"}, target)
    assert restored == {"visible0"}
    names = [path.name for path in [*target.in_dir.iterdir(), *target.ref_dir.iterdir()]]
    assert sorted(names) == sorted(shape_file(kind, "visible0") for kind in reference_cache.FILES)
