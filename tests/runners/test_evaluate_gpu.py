"""The deck and the timing checks on a real GPU (run on the H100 worker; skipped elsewhere)."""

import pytest
import torch
from engine_support import HERE, grade_tiny, run_bounded

from runners.evaluate import evaluate
from runners.schema import Verdict

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


@pytest.mark.parametrize("slug", ["rmsnorm", "softmax", "row_sum"])
def test_honest_solution_scores_on_the_gpu(slug):
    result = run_bounded(evaluate, slug, HERE / "solutions" / slug / "honest.py", device="cuda")
    assert result.verdict == Verdict.OK, result.reason
    assert 0 < result.score <= 1 and result.hidden_score > 0
    assert result.environment["gpu"] and result.timings_comparable
    assert all(s.time.n >= 30 and s.baseline_eager for s in result.shapes)


def test_work_escaping_to_a_side_stream_is_rejected():
    result = grade_tiny("side_stream", static=False, device="cuda")
    assert result.verdict == Verdict.TIMING_REJECTED, result.reason
    assert "side streams" in result.reason


@pytest.mark.parametrize(
    ("cheat", "reason"),
    [
        ("pointer_cache", "outputs of timed calls are wrong"),
        ("content_cache", "outputs of timed calls are wrong"),
        ("kernel_unused", "launched none of the solution's Triton kernels"),
        ("kernel_unused_cuda", "ran none of the solution's kernels"),
        ("kernel_misnamed_cuda", "ran none of the solution's kernels"),
    ],
)
def test_caches_and_unused_kernels_are_rejected_by_design(cheat, reason):
    # Plenty of GPU memory is left: what stops the caches is the re-check of timed outputs on
    # varied inputs at reused addresses, not running out of memory.
    result = grade_tiny(cheat, device="cuda")
    assert result.correct_visible and result.correct_hidden
    assert result.verdict == Verdict.TIMING_REJECTED, result.reason
    assert reason in result.reason


@pytest.mark.parametrize("control", ["honest", "kernel_honest", "kernel_honest_cuda"])
def test_honest_controls_of_the_launch_check_pass(control):
    result = grade_tiny(control, device="cuda")
    assert result.verdict == Verdict.OK, result.reason
    assert not result.gate("performance").details.get("profiler_errors")
