"""A timing's kept outputs go to a new file, written before any more of the solution's code
runs, and the parent moves it out of the candidate's folder as the reply comes: whatever the
solution opened earlier under that name, or runs later (the next shape's model, a fresh
process), cannot reach what is re-checked; a fresh process reads ahead only the engine's own
files (inputs, model states), never building a model early. add_rmsnorm's smoke shape on the
CPU, the candidate and the reference process in this one (the reference module as the
solution)."""

import os

import pytest

from runners import child, timing
from runners.oracle import Oracle
from runners.plan import plan_shapes, shape_file
from runners.problem import load_problem

PROBLEM = load_problem("add_rmsnorm")
SEED = 77


@pytest.fixture
def graded(tmp_path):
    plan = plan_shapes(PROBLEM, "cpu")[0][0]
    in_dir, ref_dir, cand = tmp_path / "in", tmp_path / "ref", tmp_path / "cand"
    for folder in (in_dir, ref_dir, cand):
        folder.mkdir()
    oracle = Oracle()
    oracle.prepare(
        {
            "problem_dir": str(PROBLEM.path),
            "device": "cpu",
            "shapes": [plan.message()],
            "in_dir": str(in_dir),
            "ref_dir": str(ref_dir),
        }
    )
    request = {
        "init": str(in_dir / shape_file("init", plan.id)),
        "state": str(in_dir / shape_file("state", plan.id)),
        "inputs": str(in_dir / shape_file("inputs", plan.id)),
        "out": str(cand / f"timed_{plan.id}.tensors"),
    }
    candidate = child.Candidate(PROBLEM.path / "reference.py", "cpu")
    candidate.build(request)
    return oracle, candidate, plan, request


def test_a_file_the_solution_held_open_under_the_name_is_not_the_one_rechecked(graded):
    oracle, candidate, plan, request = graded
    # The solution opened the name earlier (it owns the folder) to write there after the timing.
    with open(request["out"], "wb+") as held:
        settings = timing.Settings(warmup=1, min_samples=4, max_samples=8, vary_seed=SEED)
        reply = candidate.time({**request, "settings": settings.__dict__})
        assert reply["event_ms"] and reply["type_errors"] == []
        assert os.fstat(held.fileno()).st_ino != os.stat(request["out"]).st_ino
        held.write(b"forged outputs")
        held.flush()
    comparison = oracle.recheck(
        {
            "shape": plan.message(),
            "device": "cpu",
            "inputs": request["inputs"],
            "seed": SEED,
            "kept": request["out"],
            "max_bytes": 1 << 30,
            "tolerances": [PROBLEM.tolerance_for(d) for d in plan.dists],
        }
    )["comparison"]
    assert comparison["correct"], comparison


def test_a_load_reads_the_models_state_ahead_and_the_model_takes_it(graded, monkeypatch):
    """A fresh round's process reads each shape's state with its inputs while the last round
    is re-checked; the shape's model then loads that state instead of reading the file between
    two timings, and no model is built before its shape's own request."""
    request = graded[3]
    read = []
    load = child._load

    def counted(path, **kwargs):
        read.append(str(path))
        return load(path, **kwargs)

    monkeypatch.setattr(child, "_load", counted)
    fresh = child.Candidate(PROBLEM.path / "reference.py", "cpu")
    fresh.build(request)
    fresh.model, fresh.model_key = None, None  # as a process whose build was another shape's
    read.clear()
    fresh.load({"inputs": [request["inputs"]], "states": [request["state"]]})
    assert read == [request["state"]] and fresh.model is None
    settings = timing.Settings(warmup=1, min_samples=3, max_samples=3)
    fresh.time({**request, "settings": settings.__dict__})
    assert read == [request["state"], request["init"]]  # the state was not read again
    assert fresh.states == {}
    # A shape whose model the process holds already (a fresh process builds the first shape's
    # at its start) needs no state read ahead.
    fresh.load({"inputs": [request["inputs"]], "states": [request["state"]]})
    assert read == [request["state"], request["init"]] and fresh.states == {}


def test_states_past_the_read_ahead_budget_are_read_by_their_model_as_before(graded, monkeypatch):
    """A state that does not fit PRELOAD_STATE_BYTES is not read ahead: its shape's model reads
    it from the file, as without a read-ahead, and times the same way."""
    request = graded[3]
    monkeypatch.setattr(child, "PRELOAD_STATE_BYTES", 1)
    fresh = child.Candidate(PROBLEM.path / "reference.py", "cpu")
    fresh.build(request)
    fresh.model, fresh.model_key = None, None
    fresh.load({"inputs": [request["inputs"]], "states": [request["state"]]})
    assert fresh.states == {}
    settings = timing.Settings(warmup=1, min_samples=3, max_samples=3)
    reply = fresh.time({**request, "settings": settings.__dict__})
    assert len(reply["event_ms"]) == 3 and fresh.model is not None
