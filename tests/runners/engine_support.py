"""Shared helpers for the engine's tests: a tiny problem, cheating solutions, short limits."""

import re
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TINY = HERE / "problems" / "tiny_tanh"
RUNTIME = HERE / "solutions" / "runtime"

# Short wall clocks so a runaway candidate costs seconds; generous enough for a cold torch
# import on a loaded 2-core machine.
FAST_LIMITS = dict(build_s=90.0, step_s=12.0, cpu_s=60, data_bytes=3 * 2**30, nproc=64)
# A missing engine limit must fail the test, not hang it.
TEST_DEADLINE_S = 240.0


def run_bounded(fn, *args, **kwargs):
    """Call fn in a thread; fail the test if it is still running after the deadline."""
    box = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(TEST_DEADLINE_S)
    if thread.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} still running after {TEST_DEADLINE_S:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def grade_tiny(solution: str, *, static: bool = True, device: str = "cpu"):
    from runners.evaluate import evaluate
    from runners.sandbox import Limits

    return run_bounded(
        evaluate,
        TINY,
        RUNTIME / f"{solution}.py",
        device=device,
        limits=Limits(**fast_limits(device)),
        static=static,
    )


def prepared_reference(problem, tmp_path: Path):
    """A reference process object (in this process) that prepared `problem`'s first CPU shape
    under tmp_path/in and tmp_path/ref; returns it, the shape's plan and the inputs folder."""
    from runners.oracle import Oracle
    from runners.plan import plan_shapes

    plan = plan_shapes(problem, "cpu")[0][0]
    in_dir, ref_dir = tmp_path / "in", tmp_path / "ref"
    in_dir.mkdir()
    ref_dir.mkdir()
    oracle = Oracle()
    request = {"problem_dir": str(problem.path), "device": "cpu", "shapes": [plan.message()]}
    oracle.prepare({**request, "in_dir": str(in_dir), "ref_dir": str(ref_dir)})
    return oracle, plan, in_dir


def fast_limits(device: str) -> dict:
    """FAST_LIMITS, without the data and process limits on CUDA, where the engine's defaults
    hold: on a 64-core H100 host torch and the CUDA driver start more than 64 threads (which
    RLIMIT_NPROC counts; cudaGetDeviceCount failed with error 304 under it) and map more than
    3 GiB of data segments."""
    if device == "cpu":
        return FAST_LIMITS
    return {k: v for k, v in FAST_LIMITS.items() if k not in ("data_bytes", "nproc")}


def gate_status(result) -> dict[str, str]:
    return {gate.name: gate.status for gate in result.gates}


def solution_rules(prompt: str) -> str:
    """A prompt's sentence on what the static gate refuses and what it grades, on one line."""
    match = re.search(r"Solutions\s+are\s+(?:also\s+)?(rejected\s+for\s[^.]*\.)", prompt)
    assert match, "the prompt states no rules for solutions"
    return " ".join(match.group(1).split())
