"""Held-out shapes that count for correctness only are not timed: those smaller than the visible
regime (known from their work before any timing) and those a round timed under 5 µs. softmax's
deck on an H100, the choice `runners.performance.Performance` makes, without a GPU."""

import dataclasses

from runners import hardware, scoring
from runners.performance import Performance
from runners.plan import plan_shapes
from runners.problem import load_problem
from runners.schema import ShapeResult, TimingStats

H100 = hardware.by_slug("h100-sxm")


def performance(problem, machine=H100) -> Performance:
    """A Performance for `problem` on CUDA, as its constructor sets it up, without a grading."""
    visible, hidden = plan_shapes(problem, "cuda")
    perf = Performance.__new__(Performance)
    perf.problem, perf.device, perf.hardware = problem, "cuda", machine
    perf.shapes = {
        plan.id: ShapeResult(set=plan.set, index=plan.index, params=dict(plan.params))
        for plan in visible + hidden
    }
    perf.front, perf.held_out = visible, hidden
    perf.timed = perf.front + [plan for plan in hidden if perf._may_count(plan)]
    return perf


def timed(median_us: float) -> TimingStats:
    return TimingStats(median_us, median_us, 0.0, median_us, median_us, median_us, 50)


def test_held_out_shapes_below_the_visible_regime_are_not_timed():
    perf = performance(load_problem("softmax"))
    untimed = [plan.params for plan in perf.held_out if plan not in perf.timed]

    # a row of 8192, 61 rows of 1, 64 x 128: launch-bound on any GPU
    assert untimed == [
        {"rows": 1, "cols": 8192},
        {"rows": 61, "cols": 1},
        {"rows": 64, "cols": 128},
    ]
    assert perf.front == perf.timed[: len(perf.front)]  # every visible shape is timed
    floors = [perf._floor_s(plan) for plan in perf.front]
    for plan in perf.held_out:
        in_regime = scoring.in_visible_regime(perf._floor_s(plan), floors)
        assert (plan in perf.timed) == in_regime


def test_untimed_shapes_are_scored_out_and_fast_ones_leave_later_rounds():
    perf = performance(load_problem("softmax"))
    for plan in perf.timed:
        perf.shapes[plan.id].time = timed(120.0)
    fast = next(plan for plan in perf.timed if plan.set == "hidden")
    perf.shapes[fast.id].time = timed(4.0)  # under MIN_SCORED_US after a round

    assert fast not in perf._counting(perf.timed)
    assert len(perf._counting(perf.timed)) == len(perf.timed) - 1
    scored = perf._scored_held_out()
    assert fast not in scored and all(perf.shapes[p.id].scored for p in scored)
    untimed = [plan for plan in perf.held_out if plan not in perf.timed]
    assert untimed and not any(perf.shapes[plan.id].scored for plan in untimed)
    assert all(perf.shapes[plan.id].scored for plan in perf.front)


def test_without_a_roofline_every_held_out_shape_is_timed():
    softmax = load_problem("softmax")
    unknown_gpu = performance(softmax, machine=None)
    by_speedup = performance(dataclasses.replace(softmax, regime="speedup"))
    for perf in (unknown_gpu, by_speedup):
        assert perf.timed == perf.front + perf.held_out
        perf.shapes[perf.held_out[0].id].time = timed(2.0)
        assert perf._counting(perf.timed) == perf.timed  # no round leaves them out either
