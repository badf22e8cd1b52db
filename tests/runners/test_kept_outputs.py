"""The candidate process keeps a round's timed outputs on the device and writes them when the
parent asks (`save_kept`), once every shape of the round is timed; past UNSAVED_BYTES it writes
them at once. What it writes passes the reference's re-check. add_rmsnorm's smoke shape on the
CPU, the candidate and the reference process in this one (the reference module as solution)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from runners import child, timing
from runners.oracle import Oracle
from runners.plan import plan_shapes, shape_file
from runners.problem import load_problem

PROBLEM = load_problem("add_rmsnorm")
SEED = 77


@pytest.fixture
def graded(tmp_path):
    """A prepared reference (two shapes: the smoke one and a held-out twin) and a candidate
    process's handlers running the reference module as the solution."""
    plan = plan_shapes(PROBLEM, "cpu")[0][0]
    twin = replace(plan, set="hidden")
    in_dir, ref_dir, cand = tmp_path / "in", tmp_path / "ref", tmp_path / "cand"
    for folder in (in_dir, ref_dir, cand):
        folder.mkdir()
    oracle = Oracle()
    oracle.prepare(
        {
            "problem_dir": str(PROBLEM.path),
            "device": "cpu",
            "shapes": [plan.message(), twin.message()],
            "in_dir": str(in_dir),
            "ref_dir": str(ref_dir),
        }
    )
    candidate = child.Candidate(PROBLEM.path / "reference.py", "cpu")

    def files(shape) -> dict:
        return {
            "init": str(in_dir / shape_file("init", shape.id)),
            "state": str(in_dir / shape_file("state", shape.id)),
            "inputs": str(in_dir / shape_file("inputs", shape.id)),
            "out": str(cand / f"timed_{shape.id}.tensors"),
        }

    candidate.build(files(plan))
    return oracle, candidate, files, (plan, twin)


def time(candidate, request: dict) -> dict:
    settings = timing.Settings(warmup=1, min_samples=4, max_samples=8, vary_seed=SEED)
    return candidate.time({**request, "settings": settings.__dict__})


def rechecked(oracle, shape, request: dict) -> dict:
    reply = oracle.recheck(
        {
            "shape": shape.message(),
            "device": "cpu",
            "inputs": request["inputs"],
            "seed": SEED,
            "kept": request["out"],
            "max_bytes": 1 << 30,
            "tolerances": [PROBLEM.tolerance_for(d) for d in shape.dists],
        }
    )
    return json.loads(json.dumps(reply["comparison"]))


def test_a_rounds_kept_outputs_are_written_when_the_parent_asks(graded):
    oracle, candidate, files, shapes = graded
    requests = [files(shape) for shape in shapes]
    for request in requests:
        reply = time(candidate, request)
        assert reply["event_ms"] and reply["type_errors"] == []
    # Both shapes timed, nothing written yet: the device would idle while it is.
    assert not any(Path(request["out"]).exists() for request in requests)
    assert candidate.unsaved_bytes > 0

    candidate.save_kept({})
    assert candidate.unsaved == [] and candidate.unsaved_bytes == 0
    for shape, request in zip(shapes, requests, strict=True):
        assert Path(request["out"]).exists()
        comparison = rechecked(oracle, shape, request)
        assert comparison["correct"], comparison


def test_kept_outputs_past_the_bytes_held_are_written_at_once(graded, monkeypatch):
    oracle, candidate, files, (plan, _) = graded
    monkeypatch.setattr(child, "UNSAVED_BYTES", 0)
    request = files(plan)
    time(candidate, request)
    assert Path(request["out"]).exists() and candidate.unsaved == []
    assert rechecked(oracle, plan, request)["correct"]


def test_the_kept_outputs_are_copies_of_what_the_module_returned(graded, monkeypatch):
    """A solution may hand back views of a buffer it reuses for the next shape: what waits to be
    written is the candidate's own copy."""
    _, candidate, files, (plan, _) = graded
    measured = []
    measure = timing.measure

    def recorded(*args, **kwargs):
        measured.append(measure(*args, **kwargs))
        return measured[-1]

    monkeypatch.setattr(child.timing, "measure", recorded)
    time(candidate, files(plan))
    ((kept, _),) = candidate.unsaved
    waiting = [o for _, _, outputs in kept for o in outputs]
    before = [o.clone() for o in waiting]
    returned = [
        o
        for _, _, out in measured[0].kept
        for o in (out if isinstance(out, tuple | list) else [out])
    ]
    assert len(returned) == len(waiting) > 0
    for output in returned:  # the module's buffers overwritten, as the next shape's calls would
        output.zero_()
    assert all(torch.equal(w, b) for w, b in zip(waiting, before, strict=True))
    assert not any(torch.equal(w, torch.zeros_like(w)) for w in waiting)
