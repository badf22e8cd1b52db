"""The engine's counters on a GPU: caches keyed on addresses or contents, kernels written but
never run, stale graph replays, work left on a side stream, a solution rewriting itself, each
beside its honest control (tests/runners/solutions/runtime/), among them the idioms the static
gate flags rather than refuses (build variables, build folders, CUDA graphs, joined streams).

    python bench/cheats_gpu.py --out DIR

Each solution is graded on tests/runners/problems/tiny_tanh with the engine's full protocol and
the expected outcome checked; DIR/cheats.json holds every verdict, reason (it names the kernels
a rejected call ran) and profiler error. The same expectations run as tests on a GPU
machine (tests/runners/test_evaluate_gpu.py). Each grade is given the baselines the earlier ones
measured, as the platform gives a problem's cached baselines: only the first times them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RUNTIME = ROOT / "tests" / "runners" / "solutions" / "runtime"
TINY = ROOT / "tests" / "runners" / "problems" / "tiny_tanh"
# solution -> (expected verdict, text the reason must hold)
EXPECTED = {
    "honest": ("ok", ""),
    "kernel_honest": ("ok", ""),
    "kernel_honest_cuda": ("ok", ""),
    "pointer_cache": ("timing_rejected", "outputs of timed calls are wrong"),
    "content_cache": ("timing_rejected", "outputs of timed calls are wrong"),
    "kernel_unused": ("timing_rejected", "launched none of the solution's Triton kernels"),
    "kernel_unused_cuda": ("timing_rejected", "ran none of the solution's kernels"),
    "kernel_misnamed_cuda": ("timing_rejected", "ran none of the solution's kernels"),
    # The idioms the static gate flags rather than refuses, and the cheats each still meets.
    "honest_build_env": ("ok", ""),
    "honest_build_folder": ("ok", ""),
    "honest_cuda_graph": ("ok", ""),
    "kernel_honest_graph": ("ok", ""),
    "honest_side_stream": ("ok", ""),
    "aliased_output": ("ok", ""),
    "stale_graph_replay": ("timing_rejected", "outputs of timed calls are wrong"),
    "side_stream": ("timing_rejected", "side streams"),
    "rewrites_itself": ("forbidden", "rewrote its own solution.py"),
}


def main() -> int:
    from runners.cli import baselines_of
    from runners.evaluate import evaluate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=list(EXPECTED))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows, failures, baselines = {}, 0, {}
    for name in args.only:
        verdict, text = EXPECTED[name]
        started = time.perf_counter()
        result = evaluate(TINY, RUNTIME / f"{name}.py", device="cuda", baselines=baselines)
        baselines |= baselines_of(result.to_dict())
        performance = result.gate("performance")
        details = performance.details if performance else {}
        ok = result.verdict == verdict and text in result.reason
        failures += not ok
        rows[name] = {
            "expected": verdict,
            "verdict": result.verdict,
            "reason": result.reason,
            "as_expected": ok,
            "correct_visible": result.correct_visible,
            "correct_hidden": result.correct_hidden,
            "profiler_errors": details.get("profiler_errors", []),
            "seconds": round(time.perf_counter() - started, 1),
        }
        print(f"{name:20} {'ok ' if ok else 'BAD'} {result.verdict:16} {result.reason[:110]}")
        (args.out / "cheats.json").write_text(json.dumps(rows, indent=1))  # each grade kept
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
