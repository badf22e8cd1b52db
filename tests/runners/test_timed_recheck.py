"""The re-check of timed calls: the reference process reads the candidate's kept outputs and
compares them with its own for the same varied inputs (add_rmsnorm's smoke shape, on CPU)."""

import importlib.util
import json
import os
import struct
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from engine_support import prepared_reference

from runners import tensor_file, timing
from runners.gates import Grading
from runners.oracle import Oracle, as_output_list
from runners.plan import plan_shapes
from runners.problem import load_problem

PROBLEM = load_problem("add_rmsnorm")
SEED = 1234
UNREADABLE = "timed outputs could not be read ("
MALFORMED = "the timed calls kept for checking are missing or malformed"


@pytest.fixture
def setup(tmp_path):
    """A prepared reference process (in-process) for the first smoke shape and a held-out twin
    of it, and an honest candidate's outputs for two timed calls, as the candidate saves them."""
    plan = plan_shapes(PROBLEM, "cpu")[0][0]
    twin = replace(plan, set="hidden")
    in_dir, ref_dir = tmp_path / "in", tmp_path / "ref"
    in_dir.mkdir()
    ref_dir.mkdir()
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
    kept = [
        (base, call, honest_outputs(in_dir, plan.id, oracle, base, call))
        for base, call in [(0, 7), (2, 8)]
    ]
    return SimpleNamespace(
        oracle=oracle, plan=plan, twin=twin, in_dir=in_dir, kept=kept, tmp=tmp_path
    )


def honest_outputs(in_dir: Path, shape_id: str, oracle: Oracle, base: int, call: int) -> list:
    """What a candidate built like the child process (init arguments, strict state) returns."""
    init = torch.load(in_dir / f"init_{shape_id}.pt", weights_only=True)
    model = oracle.reference.Model(*init)
    model.load_state_dict(torch.load(in_dir / f"state_{shape_id}.pt", weights_only=True))
    bases = tensor_file.load(in_dir / f"inputs_{shape_id}.tensors", "cpu")
    args = timing.vary(timing.fresh_copy(bases[base]), SEED, call)
    with torch.no_grad():
        return as_output_list(model.eval()(*args))


def recheck(setup, kept_file: Path, max_bytes: int = 1 << 30) -> dict:
    request = {
        "op": "recheck",
        "shape": setup.plan.message(),
        "device": "cpu",
        "inputs": str(setup.in_dir / f"inputs_{setup.plan.id}.tensors"),
        "seed": SEED,
        "kept": str(kept_file),
        "max_bytes": max_bytes,
        "tolerances": tolerances(setup.plan),
    }
    return through_json(setup.oracle.recheck)(request)["comparison"]


def tolerances(plan) -> list:
    """Per base, per output: what Grading.tolerances sends."""
    return [PROBLEM.tolerance_for(distribution) for distribution in plan.dists]


def through_json(handler):
    """The handler as the protocol runs it: request and reply as JSON carries them."""
    return lambda request: json.loads(json.dumps(handler(json.loads(json.dumps(request)))))


def saved(setup, kept) -> Path:
    path = setup.tmp / "timed.tensors"
    tensor_file.save(kept, path)
    return path


def test_honest_kept_outputs_are_correct(setup):
    comparison = recheck(setup, saved(setup, setup.kept))
    assert comparison["correct"], comparison["errors"]
    assert comparison["mismatches"] == 0 and comparison["max_abs_err"] == 0.0


def test_a_stale_output_is_incorrect_with_its_mismatches_counted(setup):
    (base, call, outputs), second = setup.kept
    stale = [outputs[0].clone(), outputs[1]]
    stale[0][1, 2] += 1.0
    comparison = recheck(setup, saved(setup, [(base, call, stale), second]))
    assert not comparison["correct"]
    assert comparison["mismatches"] == 1 and comparison["worst_index"] == [1, 2]
    assert comparison["errors"] == ["output 0: 1 element(s) outside atol+rtol"]


def test_a_link_a_fifo_or_garbage_is_unreadable_not_an_exception(setup):
    link = setup.tmp / "link.pt"
    link.symlink_to(saved(setup, setup.kept))
    fifo = setup.tmp / "fifo.pt"
    os.mkfifo(fifo)
    garbage = setup.tmp / "garbage.pt"
    garbage.write_bytes(os.urandom(4096))
    for path in (link, fifo, garbage, setup.tmp / "missing.pt"):
        comparison = recheck(setup, path)
        assert not comparison["correct"]
        assert len(comparison["errors"]) == 1 and comparison["errors"][0].startswith(UNREADABLE)


def test_a_base_out_of_range_no_kept_call_or_too_many_is_malformed(setup):
    (_, call, outputs), second = setup.kept
    one_too_many = [second] * (timing.KEPT_CALLS + 1)
    forged = [second] * 1000  # would keep the reference recomputing until its timeout
    # unpacked as a triple, a tensor of a billion elements would make a billion tensors
    not_triples = [torch.zeros(3), (0.5, call, outputs), (0, call, outputs[0])]
    cases = ([(3, call, outputs), second], [(-1, call, outputs)], [], one_too_many, forged)
    for kept in (*cases, not_triples[:1], not_triples[1:2], not_triples[2:]):
        comparison = recheck(setup, saved(setup, kept))
        assert not comparison["correct"] and comparison["errors"] == [MALFORMED]


def test_a_torch_archive_or_a_forged_header_is_unreadable_before_any_tensor_is_read(setup):
    """Nothing in a candidate's file is unpickled; a header naming more bytes than the file
    holds is refused before the reference allocates them."""
    archive = setup.tmp / "archive.pt"
    torch.save(setup.kept, archive)
    plain = saved(setup, setup.kept).read_bytes()
    (length,) = struct.unpack("<Q", plain[8:16])
    header = json.loads(plain[16 : 16 + length])
    header["tensors"][0]["shape"] = [1 << 20, 1 << 20]
    header["tensors"][0]["nbytes"] = 4 << 40
    forged_bytes = json.dumps(header).encode()
    forged = setup.tmp / "forged.tensors"
    forged.write_bytes(plain[:8] + struct.pack("<Q", len(forged_bytes)) + forged_bytes)
    for path in (archive, forged):
        assert recheck(setup, path)["errors"] == [f"{UNREADABLE}UnreadableFile)"]


def test_kept_outputs_over_the_parents_bound_are_refused_unread(setup):
    path = saved(setup, setup.kept)
    assert recheck(setup, path)["correct"]
    assert recheck(setup, path, max_bytes=16)["errors"] == [f"{UNREADABLE}UnreadableFile)"]


def test_a_file_without_the_kept_list_is_unreadable(setup):
    path = setup.tmp / "outputs.tensors"
    tensor_file.save({"outputs": []}, path)
    assert recheck(setup, path)["errors"] == [f"{UNREADABLE}UnreadableFile)"]


def test_the_parent_names_type_errors_first_and_no_held_out_size(setup):
    """Grading.recheck_timed, the reference's handler standing in for its process."""
    (base, call, outputs), second = setup.kept
    narrow = [outputs[0][:, :-1], outputs[1]]  # an output of the wrong shape: sizes in the error
    kept_file = saved(setup, [(base, call, narrow), second])
    grading = SimpleNamespace(
        problem=PROBLEM,
        tolerances=tolerances,
        device="cpu",
        inputs_file=lambda plan: setup.in_dir / f"inputs_{plan.id}.tensors",
        _outputs_bound=lambda plan, calls: 1 << 30,
        ask_reference=lambda message, timeout_s: through_json(setup.oracle.recheck)(message),
    )
    reply = {"type_errors": ["call 0 output 1 is Lazy"]}
    visible = Grading.recheck_timed(grading, setup.plan, reply, kept_file, SEED)
    assert not visible.correct
    assert visible.errors[0] == "call 0 output 1 is Lazy"
    assert "(4, 32), expected (4, 33)" in visible.errors[1]
    hidden = Grading.recheck_timed(grading, setup.twin, reply, kept_file, SEED)
    assert hidden.errors[1] == "output 0: shape (...), expected (...)"


# -- tiny_select: an index output up to ties, a tolerance per case -------------------------------
SELECT = Path(__file__).resolve().parent / "problems" / "tiny_select"
SELECT_HONEST = Path(__file__).resolve().parent / "solutions" / "tiny_select" / "honest.py"


@pytest.fixture
def select(tmp_path):
    """tiny_select prepared for its first smoke shape; the honest solution's outputs (equal
    values in another order than the reference's) for a call on base 0 (normal) and one on base
    1 (large_x)."""
    problem = load_problem(SELECT)
    oracle, plan, in_dir = prepared_reference(problem, tmp_path)
    spec = importlib.util.spec_from_file_location("select_honest", SELECT_HONEST)
    honest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(honest)
    init = torch.load(in_dir / f"init_{plan.id}.pt", weights_only=True)
    model = honest.ModelNew(*init)
    model.load_state_dict(torch.load(in_dir / f"state_{plan.id}.pt", weights_only=True))
    bases = tensor_file.load(in_dir / f"inputs_{plan.id}.tensors", "cpu")
    kept = []
    for base, call in [(0, 5), (1, 6)]:
        args = timing.vary(timing.fresh_copy(bases[base]), SEED, call)
        kept.append((base, call, as_output_list(model(*args))))
    return SimpleNamespace(
        oracle=oracle, plan=plan, problem=problem, in_dir=in_dir, kept=kept, tmp=tmp_path
    )


def recheck_select(select, kept) -> dict:
    path = select.tmp / "timed.tensors"
    tensor_file.save(kept, path)
    request = {
        "op": "recheck",
        "shape": select.plan.message(),
        "device": "cpu",
        "inputs": str(select.in_dir / f"inputs_{select.plan.id}.tensors"),
        "seed": SEED,
        "kept": str(path),
        "max_bytes": 1 << 30,
        "tolerances": [select.problem.tolerance_for(d) for d in select.plan.dists],
    }
    return through_json(select.oracle.recheck)(request)["comparison"]


def test_timed_indices_are_rechecked_up_to_ties_on_the_varied_inputs(select):
    assert select.plan.dists == ["normal", "large_x", "ragged"]
    comparison = recheck_select(select, select.kept)
    assert comparison["correct"], comparison["errors"]
    base, call, (values, indices, sums) = select.kept[0]
    swapped = indices.clone()
    swapped[0] = swapped[0].flip(0)  # varied inputs have no ties: the values no longer descend
    comparison = recheck_select(select, [(base, call, [values, swapped, sums])])
    assert comparison["errors"] == [
        "output 1: the input's values at these indices: 2 element(s) outside atol+rtol"
    ]


def test_each_kept_call_is_held_to_its_base_distributions_tolerance(select):
    """large_x (base 1) allows 1e-3 on out2, normal (base 0) 1e-5."""
    off = [
        (base, call, [values, indices, sums + 5e-4])
        for base, call, (values, indices, sums) in select.kept
    ]
    assert recheck_select(select, off[1:2])["correct"]
    comparison = recheck_select(select, off[:1])
    assert not comparison["correct"] and comparison["errors"][0].startswith("output 2:")


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn]
)
def test_perturbation_worked_in_place_moves_values_as_the_plain_formula(dtype):
    """The reference process perturbs in place to save memory on large weights; the values are
    those of `tensor + N(0, 1) * 0.25 * mean|tensor|` as one expression, bit for bit."""
    from runners.oracle import _perturb

    torch.manual_seed(3)
    start = (torch.randn(257, 33) * 3).to(dtype)
    torch.manual_seed(11)
    noise = torch.randn_like(start, dtype=torch.float32)
    step = noise * 0.25 * start.float().abs().mean().clamp_min(0.1)
    if start.element_size() == 1:
        expected = (start.float() + step).to(dtype)
    else:
        expected = start + step.to(dtype)
    moved = start.clone()
    torch.manual_seed(11)
    _perturb(moved)
    assert torch.equal(moved.view(torch.uint8), expected.view(torch.uint8))
