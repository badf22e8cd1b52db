"""Kernel-to-kernel grading: the starter timed as a baseline, its held-out correctness (cached per
problem version) and the run's quadrant against it. CPU tests run the Triton interpreter; the
timing cache, which CPU gradings ignore, is tested on a GPU."""

import json
import shutil
from pathlib import Path

import pytest
import torch
from engine_support import FAST_LIMITS, HERE, RUNTIME, grade_tiny, run_bounded

from runners.cli import read_baselines
from runners.evaluate import evaluate
from runners.plan import plan_shapes
from runners.problem import load_problem
from runners.sandbox import Limits
from runners.schema import BASELINE_KINDS, StarterComparison, TimingStats, Verdict, baseline_key
from runners.scoring import starter_comparison
from runners.timing import PROTOCOL

TINY_TRITON = HERE / "problems" / "tiny_tanh_triton"


def grade(solution: str, *, device: str = "cpu", baselines: dict | None = None):
    return run_bounded(
        evaluate,
        TINY_TRITON,
        RUNTIME / f"{solution}.py",
        device=device,
        baselines=baselines,
        limits=Limits(**FAST_LIMITS),
    )


def cpu_key(params: dict[str, int]) -> str:
    problem = load_problem(TINY_TRITON)
    return baseline_key(problem.version, params, "cpu", torch.__version__, PROTOCOL)


# -- the quadrant arithmetic -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("outcomes", "quadrant", "starter_passes", "conditional"),
    [
        ([(True, True), (True, True)], "both_pass", True, 1.0),
        ([(True, True), (False, True)], "regression", True, 0.5),
        ([(True, True), (True, False)], "improvement", False, 1.0),
        ([(False, True), (True, False)], "both_fail", False, 0.0),
        ([(True, False), (False, False)], "both_fail", False, None),
    ],
)
def test_quadrant_and_conditional_correctness(outcomes, quadrant, starter_passes, conditional):
    comparison = starter_comparison(outcomes)
    assert comparison.quadrant == quadrant
    assert comparison.starter_hidden_correct is starter_passes
    assert comparison.conditional_hidden_correct == conditional


def test_a_run_right_where_the_starter_is_wrong_everywhere_is_an_improvement_without_a_ratio():
    comparison = starter_comparison([(True, False), (True, False)])
    assert comparison == StarterComparison(False, "improvement", None)


def test_no_held_out_shape_run_leaves_everything_unknown():
    assert starter_comparison([]) == StarterComparison(None, None, None)


# -- on CPU ------------------------------------------------------------------------------------
def test_an_honest_kernel_is_timed_against_its_starter_and_passes_with_it():
    result = grade("kernel_honest")
    assert result.verdict == Verdict.OK, result.reason
    smoke = [s for s in result.shapes if s.set == "smoke"]
    hidden = [s for s in result.shapes if s.set == "hidden"]
    assert smoke and hidden
    for shape in smoke:
        starter = shape.baseline_starter
        assert starter.n >= 3 and starter.median_us > 0 and shape.baseline_eager
        assert shape.speedup_starter == pytest.approx(starter.median_us / shape.time.median_us)
        assert shape.starter_correct is None  # judged on held-out shapes only
        assert shape.baseline_library is None  # the CPU times eager (and the starter) only
    assert all(s.starter_correct is True and s.correct for s in hidden)
    assert result.starter == StarterComparison(True, "both_pass", 1.0)
    # What the grade waited for it after the held-out gate: it ran beside the correctness gates.
    assert "starter_check_s" in result.cost


def test_a_kernel_special_cased_to_the_visible_shapes_is_a_regression():
    result = grade("kernel_hardcoded")
    assert result.verdict == Verdict.INCORRECT_HIDDEN, result.reason
    assert result.correct_visible and not result.correct_hidden
    hidden = [s for s in result.shapes if s.set == "hidden"]
    assert all(s.correct is False and s.starter_correct is True for s in hidden)
    assert result.starter == StarterComparison(True, "regression", 0.0)
    assert result.gate("performance").status == "skip"


def test_cached_starter_correctness_is_used_instead_of_running_the_starter_again():
    problem = load_problem(TINY_TRITON)
    hidden = plan_shapes(problem, "cpu")[1][0]
    # A cached verdict the starter would not earn (it is right there): only the cache says False.
    stale = TimingStats(1e9, 1e9, 0.0, 1e9, 1e9, 1e9, 50).to_dict()
    baselines = {
        cpu_key(hidden.params): {"starter_correct": False},
        cpu_key(problem.smoke[0]): {"eager": stale, "starter": stale},
    }
    result = grade("kernel_honest", baselines=baselines)
    assert result.verdict == Verdict.OK, result.reason
    shapes = {s.set: s for s in result.shapes}
    assert shapes["hidden"].starter_correct is False and shapes["hidden"].correct
    assert result.starter == StarterComparison(False, "improvement", None)
    # The CPU's timings belong to this machine's load: cached ones are never used there.
    assert not shapes["smoke"].baseline_cached
    assert shapes["smoke"].baseline_starter.median_us < 1e9


RAISES_PAST_16 = """
class ModelNew(ModelNew):
    def forward(self, x):
        if x.shape[1] > 16:
            raise ValueError("this starter handles 16 columns at most")
        return super().forward(x)
"""


@pytest.mark.parametrize("fault", ["wrong", "raises"])
def test_a_starter_wrong_on_the_held_out_shape_makes_an_honest_run_an_improvement(
    tmp_path: Path, fault: str
):
    folder = Path(shutil.copytree(TINY_TRITON, tmp_path / "tiny_tanh_triton"))
    starter = (RUNTIME / "kernel_hardcoded.py").read_text()
    (folder / "starter.py").write_text(starter + (RAISES_PAST_16 if fault == "raises" else ""))
    result = run_bounded(
        evaluate, folder, RUNTIME / "kernel_honest.py", device="cpu", limits=Limits(**FAST_LIMITS)
    )
    assert result.verdict == Verdict.OK, result.reason
    assert [s.starter_correct for s in result.shapes if s.set == "hidden"] == [False]
    assert result.starter == StarterComparison(False, "improvement", None)
    assert all(s.baseline_starter for s in result.shapes if s.set == "smoke")


def test_an_earlier_result_hands_on_the_starter_timing_and_an_untimed_shapes_verdict(
    tmp_path: Path,
):
    stats = TimingStats(5.0, 5.0, 0.0, 5.0, 5.0, 5.0, 9).to_dict()
    shapes = [
        {"baseline_key": "v", "baseline_eager": stats, "baseline_starter": stats},
        {"baseline_key": "h", "baseline_eager": None, "starter_correct": False},  # a CPU held-out
        {"baseline_key": "x", "baseline_eager": None, "starter_correct": None},
    ]
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"shapes": shapes}))
    cached = read_baselines(earlier)
    assert set(cached) == {"v", "h"}
    assert cached["v"]["starter"] == stats and cached["v"]["library"] is None
    assert cached["h"]["starter_correct"] is False


def test_a_pytorch_to_kernel_problem_has_no_starter_figures():
    result = grade_tiny("honest")
    assert result.verdict == Verdict.OK, result.reason
    assert result.starter is None and "starter_check_s" not in result.cost
    assert all(s.baseline_starter is None and s.starter_correct is None for s in result.shapes)


# -- on a GPU: the timing cache ---------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_gpu_grading_times_what_the_cache_lacks_and_reuses_the_rest(tmp_path: Path):
    fresh = grade("kernel_honest", device="cuda")
    assert fresh.verdict == Verdict.OK, fresh.reason
    for shape in fresh.shapes:
        assert not shape.baseline_cached
        assert all(getattr(shape, f"baseline_{kind}") for kind in BASELINE_KINDS)
        assert shape.speedup_starter > 0
    assert all(s.starter_correct for s in fresh.shapes if s.set == "hidden")
    assert fresh.starter == StarterComparison(True, "both_pass", 1.0)

    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps(fresh.to_dict()))
    full = read_baselines(earlier)
    # Values no measurement gives: seeing them in the result proves they came from the cache.
    sentinel = TimingStats(1e9, 1e9, 0.0, 1e9, 1e9, 1e9, 50).to_dict()
    for entry in full.values():
        entry["starter"] = sentinel
        entry["starter_correct"] = False if entry["starter_correct"] else entry["starter_correct"]
    cached = grade("kernel_honest", device="cuda", baselines=full)
    assert cached.verdict == Verdict.OK, cached.reason
    assert all(s.baseline_cached and s.baseline_starter.median_us == 1e9 for s in cached.shapes)
    assert cached.starter.quadrant == "improvement"  # the cached verdict, not a new run

    # What the platform stored before the library and starter lines: eager and compile only.
    old = {k: {"eager": v["eager"], "compile": v["compile"]} for k, v in full.items()}
    partial = grade("kernel_honest", device="cuda", baselines=old)
    assert partial.verdict == Verdict.OK, partial.reason
    for shape in partial.shapes:
        assert not shape.baseline_cached
        assert shape.baseline_eager.to_dict() == old[shape.baseline_key]["eager"]
        assert shape.baseline_library and 0 < shape.baseline_starter.median_us < 1e9
    assert partial.starter.quadrant == "both_pass"
