"""How long the parent's correctness comparison takes on one large output, by chunk size.

    .venv/bin/python bench/compare_cpu.py [--rows 16384 --cols 16384] [--runs 3]
        [--chunks 4194304 0]

The output is float32 of rows x cols (by default 1 GiB, softmax's held-out case 2), the
candidate's a slightly perturbed copy of the expected one, compared as the engine compares a
timed call's outputs (`runners.compare.compare_call`) with chunk sizes from `--chunks`; 0 stands
for one chunk of the whole output. Prints the median wall time and the threads torch used.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--cols", type=int, default=16384)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chunks", type=int, nargs="+", default=[1 << 22, 0])
    args = parser.parse_args()

    import torch

    from runners import compare

    torch.manual_seed(0)
    want = torch.randn(args.rows, args.cols)
    got = want + 1e-6 * torch.randn(args.rows, args.cols)
    tolerances = [{"atol": 1e-4, "rtol": 1e-4}]
    print(f"{args.rows}x{args.cols} float32, {want.numel() * 4 / 2**30:.2f} GiB, ", end="")
    print(f"{torch.get_num_threads()} threads", flush=True)
    for chunk in args.chunks:
        compare.CHUNK = chunk or want.numel()
        times = []
        for _ in range(args.runs):
            result = compare.Comparison()
            started = time.perf_counter()
            compare.compare_call(result, [want], [got], tolerances)
            times.append(time.perf_counter() - started)
            assert result.correct, result.error
        label = f"chunk {chunk}" if chunk else "one chunk"
        print(f"{label:>16}: median {statistics.median(times):.2f} s over {args.runs} runs")


if __name__ == "__main__":
    main()
