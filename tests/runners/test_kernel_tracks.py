"""The kernel-to-kernel tracks: Triton-to-Triton and CUDA-to-CUDA problems with their starters and
controls, what each category asks of a solution, and where CUDA extensions build.

Honest Triton controls pass on CPU through test_evaluate_cpu; the CUDA problems grade on a GPU only
(bench/deck_gpu.py).
"""

import subprocess
import sys

import pytest
from engine_support import HERE, grade_tiny, run_bounded

from runners import sandbox
from runners.evaluate import evaluate
from runners.problem import HIDDEN_CASES, ProblemError, load_problem
from runners.schema import Verdict

TRITON = ("layernorm_triton", "attention_triton", "swiglu_gemm_triton")
CUDA = ("transpose_cuda", "block_reduce_cuda")
SOLUTIONS = HERE / "solutions"


def control(slug: str, name: str):
    return SOLUTIONS / slug / f"{name}.py"


@pytest.mark.parametrize("slug", TRITON + CUDA)
def test_kernel_to_kernel_problem_meets_the_format(slug):
    problem = load_problem(slug)
    assert problem.category == ("cuda-to-cuda" if slug in CUDA else "triton-to-triton")
    assert 3 <= len(problem.visible) <= 5
    assert len(problem.hidden) >= 6 and set(problem.hidden_cases) == set(HIDDEN_CASES)
    assert [v for s in problem.visible for v in s.values() if v >= 256 and v % 128]
    assert problem.forbidden
    for shape in problem.visible + problem.smoke + problem.hidden:
        assert problem.flops(shape) > 0 and problem.bytes(shape) > 0
    starter = problem.starter_path.read_text()
    assert control(slug, "starter_copy").read_text() == starter
    builds_cuda = "load_inline(" in starter
    assert builds_cuda is (slug in CUDA) and problem.cpu_capable is (slug in TRITON)


@pytest.mark.parametrize("slug", TRITON)
def test_triton_starter_passes_on_cpu(slug):
    result = run_bounded(evaluate, slug, control(slug, "starter_copy"), device="cpu")
    assert result.verdict == Verdict.OK, result.reason
    assert result.correct_visible and result.correct_hidden


@pytest.mark.parametrize("slug", TRITON)
def test_triton_hardcoded_control_passes_smoke_and_fails_held_out(slug):
    result = run_bounded(evaluate, slug, control(slug, "hardcoded"), device="cpu")
    assert result.verdict == Verdict.INCORRECT_HIDDEN, result.reason
    assert result.correct_visible and result.score == 0.0


@pytest.mark.parametrize("slug", TRITON + CUDA)
def test_plain_pytorch_fails_the_static_gate_naming_the_category(slug):
    # The static gate runs before any process starts, so CUDA problems reach it on CPU too.
    result = evaluate(slug, control(slug, "not_a_kernel"), device="cuda")
    category = load_problem(slug).category
    assert result.verdict == Verdict.FORBIDDEN
    assert f"a {category} solution must" in result.reason
    assert result.gates[0].details["hits"][0]["rule"] == "category"
    assert {g.status for g in result.gates[1:]} == {"skip"}


def test_cuda_problem_on_cpu_says_it_is_gpu_only(tmp_path):
    args = ["evaluate", "--problem", "transpose_cuda", "--device", "cpu"]
    args += ["--solution", str(control("transpose_cuda", "honest")), "--json", str(tmp_path / "r")]
    done = subprocess.run(
        [sys.executable, "-m", "runners", *args],
        cwd=HERE.parents[1],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "transpose_cuda is GPU-only" in done.stderr and "nvcc" in done.stderr
    assert not (tmp_path / "r").exists()
    with pytest.raises(ProblemError, match="GPU-only"):
        evaluate("block_reduce_cuda", control("block_reduce_cuda", "honest"), device="cpu")


def test_candidate_builds_extensions_in_its_private_folder():
    result = grade_tiny("extension_dir", static=False)
    assert result.verdict == Verdict.OK, result.reason


def test_the_extension_probe_fails_without_a_private_build_folder(monkeypatch):
    def shared_cache(home, *, device):
        env = child_env(home, device=device)
        del env["TORCH_EXTENSIONS_DIR"]
        return env

    child_env = sandbox.child_env
    monkeypatch.setattr(sandbox, "child_env", shared_cache)
    result = grade_tiny("extension_dir", static=False)
    assert result.verdict == Verdict.INCORRECT, result.reason
