"""How long a compute-bound call runs fast after the device idles, by the length of the idle gap.

    python bench/warmup_gap.py --out $OUT/gap.json          # CUDA: a bf16 GEMM of about 1 ms
    python bench/warmup_gap.py --device cpu --size 256 --calls 20 --out /tmp/gap.json  # smoke

The performance gate warms each shape up for 0.5 s on compute-bound problems
(`runners.performance.COMPUTE_WARMUP_S`): after the device idles, the SM clock runs a step or
two higher for 0.2-0.3 s on the H100, and a compute-bound call follows it. A grade idles between
shapes while outputs are saved and re-checked, so it pays the warm-up for every shape and round
(fp8_gemm: 54 of them; docs/benchmarks.md, "Cost of a grade", Session 47). Timing a round's shapes
back to back would leave gaps of milliseconds between them: whether such a gap lets the clock
rise again is what this measures.

For each gap: the device runs the call back to back for --busy-s, idles for the gap (the host
sleeps), then runs --calls calls, each timed with CUDA events. Printed per gap, over --repeats:
the median of the first calls after the gap against the busy period's last calls, and the
time after the gap until the medians of windows of WINDOW calls stay within --band of that (the
warm-up that gap needs; single calls jitter by more than the band). Written to --out: that,
and each repeat's window medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

GAPS_MS = (0.0, 1.0, 5.0, 20.0, 50.0, 100.0, 200.0, 300.0, 1000.0)
# Calls after a gap are read in windows of this many (`_after_gap`).
WINDOW = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--size", type=int, default=8192, help="the GEMM's m = n = k")
    parser.add_argument("--calls", type=int, default=600, help="calls timed after each gap")
    parser.add_argument("--busy-s", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--band", type=float, default=0.003, help="relative (0.003: 0.3 %%)")
    parser.add_argument("--gaps-ms", default=",".join(str(g) for g in GAPS_MS))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    a = torch.randn(args.size, args.size, device=args.device, dtype=dtype)
    b = torch.randn(args.size, args.size, device=args.device, dtype=dtype)
    clock = _Clock(args.device)
    report = {"device": clock.name, "size": args.size, "gaps": {}}
    for gap_ms in (float(g) for g in args.gaps_ms.split(",")):
        runs = [_after_gap(clock, a, b, gap_ms, args) for _ in range(args.repeats)]
        entry = {
            "first_10_over_steady": round(statistics.median(r["first_10"] for r in runs), 4),
            "settle_ms": round(statistics.median(r["settle_ms"] for r in runs), 1),
            "steady_ms": round(statistics.median(r["steady_ms"] for r in runs), 4),
            "runs": [{k: r[k] for k in ("windows", "window_end_ms")} for r in runs],
        }
        report["gaps"][str(gap_ms)] = entry
        print(
            f"gap {gap_ms:7.1f} ms: first 10 calls at {entry['first_10_over_steady']:.4f} of the "
            f"busy time, windows of {WINDOW} within {args.band:.1%} after "
            f"{entry['settle_ms']:.1f} ms",
            flush=True,
        )
        args.out.write_text(json.dumps(report, indent=1))


def _after_gap(clock: _Clock, a: torch.Tensor, b: torch.Tensor, gap_ms: float, args) -> dict:
    started = time.perf_counter()
    busy = []
    while time.perf_counter() - started < args.busy_s:
        busy.append(clock.time(lambda: torch.mm(a, b)))
    steady = statistics.median(busy[-max(len(busy) // 4, 1) :])
    clock.idle(gap_ms / 1e3)
    after = [clock.time(lambda: torch.mm(a, b)) for _ in range(args.calls)]
    # Single calls jitter by more than the band: the calls after the gap are read in windows
    # of WINDOW calls, each window's median against the busy period's end.
    windows, ends, elapsed = [], [], 0.0
    for start in range(0, len(after) - WINDOW + 1, WINDOW):
        windows.append(statistics.median(after[start : start + WINDOW]) / steady)
        elapsed += sum(after[start : start + WINDOW])
        ends.append(elapsed)
    settle_ms = 0.0  # the end of the last window outside the band
    for ratio, end_ms in zip(windows, ends, strict=True):
        if abs(ratio - 1) > args.band:
            settle_ms = end_ms
    return {
        "first_10": statistics.median(after[:10]) / steady,
        "settle_ms": settle_ms,
        "steady_ms": steady,
        "windows": [round(ratio, 4) for ratio in windows],
        "window_end_ms": [round(end, 1) for end in ends],
    }


class _Clock:
    """One call's time in milliseconds: CUDA events on a GPU (the device synchronized after
    each call, as the engine's loop does), the host's clock on the CPU."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"
        self.name = torch.cuda.get_device_name() if self.cuda else "cpu"
        if self.cuda:
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

    def time(self, call) -> float:
        if not self.cuda:
            started = time.perf_counter()
            call()
            return (time.perf_counter() - started) * 1e3
        self.start.record()
        call()
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end)

    def idle(self, seconds: float) -> None:
        if self.cuda:
            torch.cuda.synchronize()
        time.sleep(seconds)


if __name__ == "__main__":
    main()
