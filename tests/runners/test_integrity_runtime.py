"""Cheating and faulty solutions against the runtime checks, each beside the honest control."""

import json
from pathlib import Path

from engine_support import RUNTIME, TINY, gate_status, grade_tiny

from runners.launches import defined_kernels
from runners.problem import load_problem
from runners.schema import EvaluationResult, Verdict
from runners.scoring import geomean
from runners.static_check import check_source


def static_verdict(solution: str) -> str | None:
    source = (RUNTIME / f"{solution}.py").read_text()
    return check_source(source, forbidden=load_problem(TINY).forbidden).verdict


def test_honest_control_passes_every_gate_on_cpu():
    result = grade_tiny("honest")
    assert result.verdict == Verdict.OK, result.reason
    assert set(gate_status(result).values()) == {"pass"}
    assert result.correct_visible and result.correct_hidden
    assert not result.timings_comparable
    smoke = [s.peak_fraction for s in result.shapes if s.set == "smoke"]
    assert result.score == geomean(smoke) and result.score > 0  # the declared CPU roofline
    assert EvaluationResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_hard_coded_visible_shapes_fail_on_held_out_shapes():
    result = grade_tiny("hardcoded_shapes")
    assert result.verdict == Verdict.INCORRECT_HIDDEN
    assert result.correct_visible and not result.correct_hidden
    assert "held-out case" in result.reason
    hidden = [s for s in result.shapes if s.set == "hidden"]
    assert hidden and "rows" not in (hidden[0].error or "")


def test_mutating_the_inputs_is_incorrect():
    result = grade_tiny("mutates_inputs")
    assert result.verdict == Verdict.INCORRECT
    assert "modified its inputs" in result.reason


def test_all_zero_output_is_incorrect():
    result = grade_tiny("all_zero")
    assert result.verdict == Verdict.INCORRECT
    assert "all zeros" in result.reason


def test_lower_precision_than_the_problem_allows_is_incorrect():
    result = grade_tiny("lower_precision")
    assert result.verdict == Verdict.INCORRECT
    assert result.shapes[0].mismatches > 0
    assert result.shapes[0].max_abs_err > 1e-4


def test_tensor_subclass_output_is_incorrect_even_past_the_static_gate():
    assert static_verdict("tensor_subclass") == "forbidden"
    result = grade_tiny("tensor_subclass", static=False)
    assert result.verdict == Verdict.INCORRECT
    assert "not a plain torch.Tensor" in result.reason or "Lazy" in result.reason


def test_resubmitted_reference_is_forbidden():
    result = grade_tiny("reference_resubmitted")
    assert result.verdict == Verdict.FORBIDDEN
    assert gate_status(result)["build"] == "skip"


def test_printed_pass_and_written_result_file_count_for_nothing(tmp_path: Path):
    result = grade_tiny("fake_pass", static=False)
    assert result.verdict == Verdict.INCORRECT
    assert result.score == 0.0


def test_exiting_early_with_status_zero_is_a_runtime_error():
    result = grade_tiny("exits_early", static=False)
    assert result.verdict == Verdict.RUNTIME_ERROR


def test_forged_sample_lists_are_rejected_as_malformed():
    result = grade_tiny("forges_samples", static=False)
    assert result.verdict == Verdict.TIMING_REJECTED, result.reason
    assert "the timing reply is malformed" in result.reason


def test_timer_patched_after_import_is_rejected():
    result = grade_tiny("patches_timer", static=False)
    assert result.verdict == Verdict.TIMING_REJECTED
    assert "time.perf_counter" in result.reason


def test_candidate_sees_no_secret_and_no_hidden_file(monkeypatch):
    monkeypatch.setenv("ARENA_TEST_SECRET", "do-not-leak-7f3a")
    assert static_verdict("reads_secrets") == "forbidden"
    result = grade_tiny("reads_secrets", static=False)
    assert result.verdict == Verdict.OK, result.reason
    assert "do-not-leak-7f3a" not in json.dumps(result.to_dict())


def test_a_cache_keyed_on_input_addresses_returns_stale_outputs_and_is_rejected():
    # Both correctness gates pass (each input set is new there); the timed calls' varied inputs
    # land on addresses seen before with new contents, and the re-check of their outputs
    # against the reference's for those exact inputs fails. No memory limit is involved.
    result = grade_tiny("pointer_cache")
    assert result.correct_visible and result.correct_hidden
    assert result.verdict == Verdict.TIMING_REJECTED, result.reason
    assert "outputs of timed calls are wrong" in result.reason


def test_a_cache_keyed_on_a_content_fingerprint_is_rejected():
    result = grade_tiny("content_cache")
    assert result.correct_visible and result.correct_hidden
    assert result.verdict == Verdict.TIMING_REJECTED, result.reason
    assert "outputs of timed calls are wrong" in result.reason


def test_a_kernel_that_never_runs_is_rejected_and_its_honest_twin_passes():
    cheat = grade_tiny("kernel_unused")
    assert cheat.correct_visible and cheat.correct_hidden  # the PyTorch fallback is right
    assert cheat.verdict == Verdict.TIMING_REJECTED, cheat.reason
    assert "launched none of the solution's Triton kernels (tanh_kernel)" in cheat.reason
    honest = grade_tiny("kernel_honest")
    assert honest.verdict == Verdict.OK, honest.reason


def test_cuda_kernels_named_like_pytorchs_leave_only_the_profiler_check_to_stop_them():
    # On CPU nothing is profiled; the GPU tests grade it (test_evaluate_gpu.py).
    source = (RUNTIME / "kernel_misnamed_cuda.py").read_text()
    assert check_source(source, forbidden=load_problem(TINY).forbidden).verdict is None
    assert defined_kernels(source).cuda == {"vectorized_elementwise_kernel", "elementwise_kernel"}


def test_importing_the_harness_or_the_profiler_is_forbidden():
    for source in ("import runners.launches", "from torch.profiler import profile"):
        report = check_source(source, forbidden=[])
        assert report.verdict == "forbidden" and "[patching]" in report.reason


def test_one_output_buffer_returned_by_every_call_is_compared_call_by_call():
    """A module that keeps one output buffer overwrites its last call's outputs: each call's
    outputs are copied as they come, in the correctness gates and the timing, so the honest
    solution passes and its evidence says the outputs alias."""
    result = grade_tiny("aliased_output")
    assert result.verdict == Verdict.OK, result.reason
    assert result.gate("correct_visible").details["aliased_outputs"] is True
    assert result.gate("performance").details["aliased"]


def test_a_solution_that_rewrites_its_own_file_is_forbidden():
    """File writes are allowed in the candidate's folder, which holds solution.py: replacing it
    is caught before any fresh process could import it, and at the end of the timing."""
    result = grade_tiny("rewrites_itself")
    assert result.verdict == Verdict.FORBIDDEN, result.reason
    assert "rewrote its own solution.py" in result.reason


def test_a_reply_forged_on_the_engines_pipe_is_refused():
    """The solution writes a reply line of its own to the reply pipe: it lacks the request's
    nonce, so the parent refuses it rather than take it for the engine's answer."""
    result = grade_tiny("forges_reply", static=False)
    assert result.verdict == Verdict.RUNTIME_ERROR, result.reason
    assert "not written by the engine" in result.reason
