"""A round whose only problem is escaped device work is timed again in a fresh process before
the grade is rejected: a host thread descheduled after the call reads the same as a side stream,
and only the side stream escapes on every attempt. The real engine on the CPU; the escape is
put into the timing check's answer, which the CPU clock cannot produce."""

import statistics

import pytest
from engine_support import FAST_LIMITS, RUNTIME, TINY, run_bounded

from runners import performance, scoring
from runners.evaluate import evaluate
from runners.sandbox import Limits
from runners.schema import Verdict

ESCAPE = f"{scoring.ESCAPED} 900.0 us until the device was idle against 500.0 us timed"


def disturb(monkeypatch, times: int, problem: str = ESCAPE) -> list[int]:
    """The first `times` timing replies get `problem`; returns the count of replies checked."""
    checked = [0]
    honest = scoring.timing_problems

    def check(reply, parent_wall_s):
        checked[0] += 1
        found = honest(reply, parent_wall_s)
        return [problem, *found] if checked[0] <= times else found

    monkeypatch.setattr(scoring, "timing_problems", check)
    return checked


def grade():
    return run_bounded(
        evaluate, TINY, RUNTIME / "honest.py", device="cpu", limits=Limits(**FAST_LIMITS)
    )


def test_a_disturbed_round_is_timed_again_and_only_the_new_attempt_counts(monkeypatch):
    checked = disturb(monkeypatch, times=1)
    result = grade()

    assert result.verdict == Verdict.OK, result.reason
    performance_gate = result.gate("performance")
    first = next(shape for shape in result.shapes if shape.time)
    assert performance_gate.details["retimed"] == [
        {"shape": f"{first.set} {first.index + 1}", "round": 1, "problem": ESCAPE}
    ]
    assert first.time.rounds == 1  # the disturbed attempt's samples were dropped
    timed = [shape for shape in result.shapes if shape.time]
    assert checked[0] == len(timed) + 1


def test_work_that_escapes_on_every_attempt_is_rejected(monkeypatch):
    disturb(monkeypatch, times=10**6)
    result = grade()

    assert result.verdict == Verdict.TIMING_REJECTED
    assert result.reason.endswith(ESCAPE)
    assert len(result.gate("performance").details["retimed"]) == 1  # timed again once


def test_a_grade_times_again_at_most_retimes_rounds(monkeypatch):
    monkeypatch.setattr(performance, "RETIMES", 0)
    disturb(monkeypatch, times=1)

    assert grade().verdict == Verdict.TIMING_REJECTED


def test_other_timing_problems_are_not_timed_again(monkeypatch):
    disturb(monkeypatch, times=1, problem="host wall time disagrees with the reported device times")
    result = grade()

    assert result.verdict == Verdict.TIMING_REJECTED
    assert "host wall time disagrees" in result.reason
    assert "retimed" not in result.gate("performance").details


def test_the_slower_attempt_counts_so_a_retime_never_makes_a_shape_faster(monkeypatch):
    """A solution could escape work on purpose to redraw its process; the disturbed attempt,
    here a thousand times slower, stays the round's."""
    honest = scoring.timing_problems
    attempts = []

    def check(reply, parent_wall_s):
        if not attempts:
            reply["event_ms"] = [value * 1000 for value in reply["event_ms"]]
        attempts.append(statistics.median(reply["event_ms"]) * 1e3)  # in µs
        return [ESCAPE] if len(attempts) == 1 else honest(reply, parent_wall_s)

    monkeypatch.setattr(scoring, "timing_problems", check)
    result = grade()

    assert result.verdict == Verdict.OK, result.reason
    (retimed,) = [shape for shape in result.shapes if shape.time]
    disturbed, again = attempts
    assert disturbed > again
    assert retimed.time.rounds == 1
    assert retimed.time.median_us == pytest.approx(disturbed)
