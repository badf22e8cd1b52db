"""The idioms the static gate flags instead of refusing, graded end to end: each honest control
passes every gate with its flag recorded, and each cheat built on the idiom is caught, by the
rule that still refuses (tests/runners/test_static_check.py) or by the runtime check the flag
names (here)."""

import pytest
import torch
from engine_support import RUNTIME, TINY, gate_status, grade_tiny

from runners import sandbox
from runners.problem import load_problem
from runners.schema import Verdict
from runners.static_check import check_source


def static_flags(solution: str) -> set[str]:
    report = check_source(
        (RUNTIME / f"{solution}.py").read_text(), forbidden=load_problem(TINY).forbidden
    )
    assert report.ok, report.reason
    return {flag.rule for flag in report.flags}


@pytest.mark.parametrize(
    ("control", "flag"),
    [
        ("honest_build_env", "build_environment"),
        ("honest_build_folder", "file_write"),
        ("honest_cuda_graph", "cuda_graph"),
        ("kernel_honest_graph", "cuda_graph"),
        ("honest_side_stream", "side_stream"),
    ],
)
def test_an_honest_control_of_a_flagged_idiom_passes_every_gate_on_cpu(control, flag):
    result = grade_tiny(control)
    assert result.verdict == Verdict.OK, result.reason
    assert set(gate_status(result).values()) == {"pass"}
    static = result.gate("static")
    assert static.details["hits"] == []
    flags = static.details["flags"]
    assert flag in {entry["rule"] for entry in flags} and flag in static.reason
    assert all(set(entry) == {"rule", "line", "message"} for entry in flags)


def test_a_graph_style_replay_on_stale_inputs_passes_correctness_and_fails_the_recheck():
    # What stops a stale replay is not the static gate (it flags real graphs only) but the
    # fresh, varied inputs of every timed call and the re-check of the last ones' outputs.
    assert static_flags("stale_graph_replay") == set()
    result = grade_tiny("stale_graph_replay")
    assert result.correct_visible and result.correct_hidden
    assert result.verdict == Verdict.TIMING_REJECTED, result.reason
    assert "outputs of timed calls are wrong" in result.reason


def test_a_result_file_written_past_the_file_write_flag_counts_for_nothing():
    assert static_flags("fake_pass") == {"file_write"}
    result = grade_tiny("fake_pass")
    assert gate_status(result)["static"] == "pass"
    assert result.verdict == Verdict.INCORRECT and result.score == 0.0


@pytest.mark.skipif(
    not (sandbox.probe().namespaces and sandbox.probe().setpriv),
    reason="needs root with unshare, setpriv and prlimit",
)
def test_flagged_file_writes_land_only_in_the_candidates_own_folder():
    # Inputs, expected outputs, the harness, the problem copy, the repository and torch all
    # refuse the sandboxed candidate's writes; its own working folder takes them.
    assert static_flags("writes_outside") == {"file_write"}
    result = grade_tiny("writes_outside")
    assert result.isolation["sandboxed"]
    assert result.verdict == Verdict.OK, result.reason


def test_a_forked_side_stream_left_running_passes_the_static_gate_for_the_span_check():
    # side_stream.py forks its stream but returns before the stream's work ends: the static
    # gate flags it, and on the GPU the span check rejects it (test_evaluate_gpu.py).
    assert static_flags("side_stream") == {"side_stream"}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize(
    "control", ["honest_cuda_graph", "kernel_honest_graph", "honest_side_stream"]
)
def test_graphs_and_joined_side_streams_pass_on_the_gpu(control):
    # kernel_honest_graph's Triton kernel launches only under capture: the launch check counts
    # each replay's captured launches (runners.launches.count_graph_replays).
    result = grade_tiny(control, device="cuda")
    assert result.verdict == Verdict.OK, result.reason


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_flagged_side_stream_left_running_is_rejected_by_the_span_check():
    result = grade_tiny("side_stream", device="cuda")
    assert gate_status(result)["static"] == "pass"
    assert result.verdict == Verdict.TIMING_REJECTED, result.reason
    assert "side streams" in result.reason
