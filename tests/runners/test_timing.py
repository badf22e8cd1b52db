"""The timing loop's bookkeeping, on the CPU path."""

import random

import pytest

from runners import timing


def test_running_rse_matches_the_exact_formula():
    rng = random.Random(0)
    values = [rng.uniform(5.0, 50.0) for _ in range(500)]
    running = timing._Running()
    for value in values:
        running.add(value)
    assert running.rse() == pytest.approx(timing.relative_standard_error(values), rel=1e-9)


def test_running_rse_is_infinite_before_two_samples():
    running = timing._Running()
    assert running.rse() == float("inf")
    running.add(1.0)
    assert running.rse() == float("inf")


def test_constant_samples_converge_at_min_samples():
    settings = timing.Settings(warmup=0, min_samples=5, max_samples=100, cap_s=60.0, rse_target=0.5)
    calls = []
    samples = timing.measure(
        lambda args: calls.append(args[0]) or args[0], [[1], [2]], device="cpu", settings=settings
    )
    assert len(samples.event_ms) >= 5
    assert len(calls) == len(samples.event_ms)  # no warm-up calls, no time-based warm-up on CPU


def test_warmup_count_is_honoured_on_cpu():
    settings = timing.Settings(warmup=3, min_samples=2, max_samples=2, warmup_s=10.0)
    calls = []
    samples = timing.measure(lambda args: calls.append(1), [[1]], device="cpu", settings=settings)
    assert len(calls) == 3 + len(samples.event_ms)


def test_settings_round_trip_through_the_request_dict():
    settings = timing.Settings(flush_bytes=1 << 20, hold_cycles=1000)
    assert timing.Settings.from_dict(dict(settings.__dict__)) == settings
    assert timing.Settings().hold_cycles == 0 and timing.Settings().warmup_s == 0.1
