"""The queue hold on a real GPU (run on the device machine; skipped elsewhere): the window opens
on a fully queued call, and a hold nobody releases gives up at its timeout."""

import dataclasses
import time

import pytest
import torch

from runners import hold, timing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


def _hold_ms(queue_hold: hold.QueueHold, release_after_s: float | None) -> float:
    before, after = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    before.record()
    queue_hold.wait()
    after.record()
    if release_after_s is not None:
        time.sleep(release_after_s)
        queue_hold.release()
    torch.cuda.synchronize()
    return before.elapsed_time(after)


def test_the_hold_lasts_until_the_host_releases_it():
    queue_hold = hold.QueueHold(timeout_us=200_000)
    _hold_ms(queue_hold, 0.0)  # compiles the kernel
    assert queue_hold.kind == "queue", queue_hold.error
    assert 15 <= _hold_ms(queue_hold, 0.02) < 100  # released after 20 ms
    assert _hold_ms(queue_hold, 0.0) < 5


def test_a_hold_nobody_releases_gives_up_at_its_timeout():
    queue_hold = hold.QueueHold(timeout_us=30_000)
    _hold_ms(queue_hold, 0.0)
    assert 29 <= _hold_ms(queue_hold, None) < 80


def test_without_triton_the_hold_is_the_fixed_spin(monkeypatch):
    monkeypatch.setattr(hold, "triton", None)
    queue_hold = hold.QueueHold(timeout_us=5000)
    assert queue_hold.kind == "fixed" and "Triton" in queue_hold.error
    _hold_ms(queue_hold, None)  # the first spin loads its kernel
    assert 0.05 < _hold_ms(queue_hold, None) < 5  # 400,000 cycles: about 0.2 ms


def test_a_call_slow_to_queue_is_timed_at_its_device_time():
    """A call that spends 1 ms on the host before launching 10 µs of work reads near 10 µs,
    where behind a 200 µs fixed spin it read the host's millisecond."""
    work = torch.empty(2**20, device="cuda")

    def slow_to_queue(args):
        until = time.perf_counter() + 1e-3
        while time.perf_counter() < until:
            pass
        return args[0].mul_(1.0)

    settings = timing.Settings(
        min_samples=30, max_samples=30, flush_bytes=2**20, hold_timeout_us=5000.0
    )
    samples = timing.measure(slow_to_queue, [[work]], device="cuda", settings=settings)
    assert samples.hold == "queue", samples.hold_error
    assert sorted(samples.event_ms)[15] < 0.2
    unheld = timing.measure(
        slow_to_queue,
        [[work]],
        device="cuda",
        settings=dataclasses.replace(settings, hold_timeout_us=0.0),
    )
    assert sorted(unheld.event_ms)[15] > 0.8


def _waits_on_the_device(args):
    """A decode-style call: reads a length back to the host, then launches the work."""
    length = int(args[1].max().item())
    return args[0][:length].mul(2.0)


def test_a_call_that_waits_on_the_device_drops_the_hold():
    """`.item()` inside the call lets the device past the hold only at its timeout; the clock
    drops the hold and times the call as without one (no 5 ms per call, no sample behind it)."""
    work = torch.randn(2**22, device="cuda")
    lengths = torch.tensor([2**21, 2**22], device="cuda")
    settings = timing.Settings(
        min_samples=30, max_samples=30, flush_bytes=2**24, hold_timeout_us=5000.0
    )
    samples = timing.measure(
        _waits_on_the_device, [[work, lengths]], device="cuda", settings=settings
    )
    assert samples.hold_dropped
    assert len(samples.event_ms) == 30 and max(samples.host_ms) < 4.0
    unheld = timing.measure(
        _waits_on_the_device,
        [[work, lengths]],
        device="cuda",
        settings=dataclasses.replace(settings, hold_timeout_us=0.0),
    )
    assert not unheld.hold_dropped
    held_us, unheld_us = (sorted(s.event_ms)[15] * 1e3 for s in (samples, unheld))
    assert abs(held_us / unheld_us - 1) < 0.25, (held_us, unheld_us)


def test_a_call_queued_in_time_keeps_the_hold():
    work = torch.empty(2**20, device="cuda")
    settings = timing.Settings(
        min_samples=30, max_samples=30, flush_bytes=2**20, hold_timeout_us=5000.0
    )
    samples = timing.measure(lambda a: a[0].mul(1.0), [[work]], device="cuda", settings=settings)
    assert samples.hold == "queue" and not samples.hold_dropped


def test_an_idle_start_times_work_on_another_stream_from_the_start_event():
    """With idle_start the device is idle before the start event: work a call puts on a stream
    of its own cannot run before the window opens, so a join-before-return call reads its work."""
    side = torch.cuda.Stream()
    work = torch.randn(2**24, device="cuda")

    def on_side_stream(args):
        with torch.cuda.stream(side):
            out = args[0].sin()
        torch.cuda.current_stream().wait_stream(side)
        return out

    settings = timing.Settings(min_samples=30, max_samples=30, flush_bytes=2**24, idle_start=True)
    samples = timing.measure(on_side_stream, [[work]], device="cuda", settings=settings)
    plain = timing.measure(lambda a: a[0].sin(), [[work]], device="cuda", settings=settings)
    assert sorted(samples.event_ms)[15] >= 0.8 * sorted(plain.event_ms)[15]
