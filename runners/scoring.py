"""Timing statistics, integrity checks on samples, and per-shape and run scores. Stdlib only."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runners.hardware import Hardware, peak_fraction, speed_of_light_s
from runners.schema import BASELINE_KINDS, ShapeResult, StarterComparison, TimingStats

# Host wall time is measured around the call plus a device-wide synchronize; the event spans
# only the call's stream. Honest code lands within launch and wake-up latency of each other.
ESCAPE_SLACK_MS = 0.05
ESCAPE_RATIO = 1.5
ESCAPED = "device work continued after the call returned:"


def disturbed_only(problems: Sequence[str]) -> bool:
    """Whether every problem of a timing reply is escaped device work, which something outside
    the candidate can also cause (a host thread descheduled between the call's end and its
    synchronize returning): such a shape is timed again before it is rejected. Work a solution
    sends to streams of its own escapes on every attempt."""
    return bool(problems) and all(problem.startswith(ESCAPED) for problem in problems)


# Kernels can beat bytes/bandwidth a little when their output writes are still in L2 at the
# end event; anything faster than this share of the speed of light is impossible.
SOL_MARGIN = 0.8
# A held-out shape counts toward hidden_score when its speed-of-light time is at least this share
# of the smallest visible shape's: smaller ones are launch-bound on any GPU, so their peak
# fraction measures launch latency rather than the kernel, and only their correctness counts.
REGIME_SHARE = 1 / 8
# Nor does a held-out shape whose calls take under this long: one launch's latency jitter is a
# large share of it, so its time does not reproduce to the protocol's 1.5 % across processes.
MIN_SCORED_US = 5.0
# A round whose median lies further than this from the rounds' median is left out of the
# reported time (`round_center`): a slow episode (2-3x), not a clock step (about 1.3 %) nor a
# process's level (each round runs in its own process; causal_attention's 27 us call sits
# 4-9 % apart in some of them, and a 3 % band left out whichever level was rarer: 2.4 % across
# five grades instead of 1.2 %; docs/benchmarks.md, "A process per round").
ROUND_TOLERANCE = 0.10
# A shape whose reported time is less precise than this (the relative standard error of the mean
# of its round medians) takes more rounds (`unsettled`): half the protocol's target across fresh
# processes for its size, 0.5 % from 50 us, 1.5 % below. A call whose process levels lie 2.3 %
# apart (moe_swiglu's 66 us shape) spread 0.74 % across grades from 6 rounds; the standard error
# of 6 such rounds is about 0.5 %.
SETTLED_ERROR = ((50.0, 0.0025), (0.0, 0.0075))  # (from this many microseconds, error)


def _kept(medians: Sequence[float]) -> list[float]:
    """The round medians within `ROUND_TOLERANCE` of their median (all of them if none is)."""
    middle = statistics.median(medians)
    return [m for m in medians if abs(m - middle) <= ROUND_TOLERANCE * middle] or list(medians)


def round_center(medians: Sequence[float]) -> float:
    """The mean of the rounds' medians, leaving out a round more than `ROUND_TOLERANCE` from
    their median.

    A round's median ignores the round's own outliers. Across rounds the mean, not the median:
    an unlocked SM clock sits on steps about 1.3 % apart that persist for seconds, so rounds
    land on one step or another, and a median of three only picks a step (fp8_gemm's 800 µs
    shape spread 0.8 % across fresh grades that way, its mean 0.4 %). A round caught whole in a
    slow episode (short calls at 2-3x their time for seconds, seen on the H100) lies far
    outside the steps and is left out.
    """
    return statistics.fmean(_kept(medians))


def round_error(medians: Sequence[float]) -> float:
    """The relative standard error of `round_center`: the kept rounds' standard deviation over
    the square root of their number, over their mean. 0 from a single round (no estimate)."""
    kept = _kept(medians)
    if len(kept) < 2:
        return 0.0
    return statistics.stdev(kept) / math.sqrt(len(kept)) / statistics.fmean(kept)


def unsettled(stats: TimingStats) -> bool:
    """Whether a shape's rounds disagree by more than `SETTLED_ERROR` allows for its size."""
    target = next(error for start_us, error in SETTLED_ERROR if stats.median_us >= start_us)
    return round_error(stats.round_medians_us) > target


def summarize(rounds_ms: Sequence[Sequence[float]]) -> TimingStats:
    """Statistics over one or more rounds of samples of the same call, in microseconds.

    `median_us` is each round's median, averaged over the rounds (`round_center`); the other
    figures pool every sample.
    """
    values = sorted(v * 1e3 for samples in rounds_ms for v in samples)
    deciles = statistics.quantiles(values, n=10) if len(values) > 1 else values * 9
    medians = [statistics.median(r) * 1e3 for r in rounds_ms if r]
    return TimingStats(
        median_us=round_center(medians),
        mean_us=statistics.fmean(values),
        std_us=statistics.stdev(values) if len(values) > 1 else 0.0,
        min_us=values[0],
        p10_us=deciles[0],
        p90_us=deciles[-1],
        n=len(values),
        rounds=len(medians),
        round_medians_us=medians,
    )


def timing_problems(reply: dict, parent_wall_s: float) -> list[str]:
    """Reasons to distrust a timing reply: escaped work, clocks that disagree, patched timers."""
    problems = []
    if reply.get("timers_replaced"):
        replaced = ", ".join(map(str, reply["timers_replaced"]))
        problems.append(f"timing functions were replaced: {replaced}")
    if not well_formed(reply):
        return [*problems, "the timing reply is malformed"]
    event, span, host = reply["event_ms"], reply["span_ms"], reply["host_ms"]
    event_median, span_median = statistics.median(event), statistics.median(span)
    if span_median > ESCAPE_RATIO * event_median + ESCAPE_SLACK_MS:
        problems.append(
            f"{ESCAPED} {span_median * 1e3:.1f} us until "
            f"the device was idle against {event_median * 1e3:.1f} us timed (side streams?)"
        )
    if statistics.median(host) < 0.9 * event_median or sum(host) / 1e3 > parent_wall_s:
        problems.append("host wall time disagrees with the reported device times")
    if min(event) <= 0:
        problems.append("non-positive sample times")
    return problems


def well_formed(reply: dict) -> bool:
    """Non-empty sample lists of equal length holding finite numbers only (the candidate's
    process writes the reply, so nothing else about it is taken on trust)."""
    event, span, host = (reply.get(key) for key in ("event_ms", "span_ms", "host_ms"))
    if not all(_finite_numbers(v) for v in (event, span, host)):
        return False
    return bool(event) and len(event) == len(span) == len(host)


def _finite_numbers(values: Any) -> bool:
    """A list of finite ints or floats (the candidate's process writes the reply)."""
    return isinstance(values, list) and all(
        type(v) in (int, float) and math.isfinite(v) for v in values
    )


def score_shape(
    shape: ShapeResult,
    *,
    hardware: Hardware | None,
    regime: str,
    dtype: str,
    flops: float | None,
    nbytes: float | None,
) -> str | None:
    """Fill throughput, peak fraction and speedups; return a reason if faster than light.

    A speedup-regime problem has no flops or bytes formula, hence no throughput, peak fraction
    or speed of light: only its speedups are filled."""
    seconds = shape.time.median_us * 1e-6
    shape.tflops = None if flops is None else flops / seconds / 1e12
    shape.gbps = None if nbytes is None else nbytes / seconds / 1e9
    _speedups(shape)
    if hardware is None or regime == "speedup":
        return None
    shape.peak_fraction = peak_fraction(
        hardware, regime=regime, flops=flops, nbytes=nbytes, dtype=dtype, seconds=seconds
    )
    floor_s = speed_of_light_s(hardware, flops=flops, nbytes=nbytes, dtype=dtype)
    if seconds < SOL_MARGIN * floor_s:
        return (
            f"{shape.time.median_us:.2f} us is faster than the speed of light on "
            f"{hardware.name} ({floor_s * 1e6:.2f} us for this shape's bytes and flops)"
        )
    return None


def _speedups(shape: ShapeResult) -> None:
    median = shape.time.median_us
    for kind in BASELINE_KINDS:
        baseline = getattr(shape, f"baseline_{kind}")
        if baseline:
            setattr(shape, f"speedup_{kind}", baseline.median_us / median)


def in_visible_regime(floor_s: float, visible_floors_s: Sequence[float]) -> bool:
    """Whether a held-out shape with speed-of-light time `floor_s` is sized like the visible
    shapes (see REGIME_SHARE)."""
    return bool(visible_floors_s) and floor_s >= REGIME_SHARE * min(visible_floors_s)


def geomean(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(statistics.fmean(math.log(v) for v in values))


@dataclass(frozen=True)
class RunAggregates:
    """A run's figures over its shapes: the score and held-out score it ranks by, and its
    geometric-mean speedups over the visible shapes that boards show beside them."""

    score: float | None
    hidden_score: float | None
    speedup_eager: float | None
    speedup_compile: float | None


def run_aggregates(
    shapes: Sequence[Any], *, front: str, ok: bool, by_speedup: bool
) -> RunAggregates:
    """The run's aggregates from its shapes (``ShapeResult``s, or rows with the same fields):
    the score is the geometric mean over the `front` shapes ("visible"; "smoke" on the CPU),
    the held-out score over the held-out shapes that are `scored` (in the visible regime), of
    their peak fractions, or of their speedups over eager for problems without a roofline
    (`by_speedup`); both are 0 for a run that failed a gate (not `ok`). A speedup is the mean
    over the visible shapes where the baseline was timed (a shape whose baseline timed out
    leaves the others' mean)."""
    figure = "speedup_eager" if by_speedup else "peak_fraction"
    scored = [shape for shape in shapes if shape.scored]
    score = geomean([getattr(s, figure) for s in scored if s.set == front])
    hidden_score = geomean([getattr(s, figure) for s in scored if s.set == "hidden"])
    visible = [shape for shape in shapes if shape.set == "visible"]
    return RunAggregates(
        score=score if ok else 0.0,
        hidden_score=hidden_score if ok else 0.0,
        speedup_eager=_timed_geomean([s.speedup_eager for s in visible]),
        speedup_compile=_timed_geomean([s.speedup_compile for s in visible]),
    )


def _timed_geomean(values: Sequence[float | None]) -> float | None:
    return geomean([value for value in values if value is not None and value > 0])


def starter_comparison(outcomes: Sequence[tuple[bool, bool]]) -> StarterComparison:
    """A kernel-to-kernel run against its starter from (run correct, starter correct) per
    held-out shape run on this device: the quadrant (see StarterComparison) and the share of
    the shapes the starter gets right that the run gets right too. No shapes, nothing known."""
    if not outcomes:
        return StarterComparison()
    run_passes = all(run for run, _ in outcomes)
    starter_passes = all(starter for _, starter in outcomes)
    quadrant = {
        (True, True): "both_pass",
        (False, True): "regression",
        (True, False): "improvement",
        (False, False): "both_fail",
    }[(run_passes, starter_passes)]
    where_starter_right = [run for run, starter in outcomes if starter]
    conditional = (
        sum(where_starter_right) / len(where_starter_right) if where_starter_right else None
    )
    return StarterComparison(
        starter_hidden_correct=starter_passes,
        quadrant=quadrant,
        conditional_hidden_correct=conditional,
    )
