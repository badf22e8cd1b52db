"""The timing loop's bookkeeping, on the CPU path."""

import dataclasses
import random
import time

import pytest
import torch

from runners import timing
from runners.schema import GateResult


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
    settings = timing.Settings(flush_bytes=1 << 20, hold_timeout_us=1000.0)
    assert timing.Settings.from_dict(dict(settings.__dict__)) == settings
    assert timing.Settings().hold_timeout_us == 0 and timing.Settings().warmup_s == 0.1


def test_ring_spreads_copies_over_the_memory_budget():
    bases = [[torch.zeros(256, dtype=torch.uint8)] for _ in range(3)]  # 256 bytes a call
    assert timing._Ring(bases).slots == 4  # one more than the bases
    assert timing._Ring(bases, spread_bytes=256 * 10).slots == 10
    assert timing._Ring(bases, spread_bytes=1 << 30).slots == timing._Ring.MAX_SLOTS
    assert timing._Ring(bases, spread_bytes=256).slots == 4  # never fewer than the minimum


def test_ring_keeps_its_slots_of_copies_and_outputs_alive():
    bases = [[torch.full((4,), float(k))] for k in range(2)]
    ring = timing._Ring(bases, spread_bytes=16 * 6)
    for i in range(20):
        base, args = ring.next(i)
        assert torch.equal(args[0], bases[base][0]) and args[0] is not bases[base][0]
        assert args[0] is ring.buffers[i % ring.slots][0]  # addresses repeat every `slots` calls
        ring.hold(args[0] * 2)
    assert len(ring.outputs) == ring.slots == 6
    inputs = {buffer[0].data_ptr() for buffer in ring.buffers}
    assert len(inputs) == 6 and inputs.isdisjoint({o.data_ptr() for o in ring.outputs})


def test_varied_calls_never_repeat_contents_and_the_reference_rebuilds_them_exactly():
    torch.manual_seed(0)
    # The noise is 2**-6 relative, or two rounding steps of the dtype; rounding adds one step
    # (fp8's subnormals are coarser still).
    bounds = {torch.float32: 2**-6 + 1e-6, torch.bfloat16: 2**-6 + 2**-7, torch.float8_e4m3fn: 0.5}
    for dtype, bound in bounds.items():
        bases = [[torch.randn(64, 32).to(dtype), torch.arange(8)] for _ in range(3)]
        ring = timing._Ring(bases, vary_seed=1234)
        contents = set()
        for i in range(100):
            base, args = ring.next(i)
            contents.add(args[0].view(torch.uint8).numpy().tobytes())
            assert torch.equal(args[1], bases[base][1])  # integer inputs are structure: kept
            rebuilt = timing.vary(timing.fresh_copy(bases[base]), 1234, i)
            assert torch.equal(rebuilt[0].view(torch.uint8), args[0].view(torch.uint8))
            ratio = args[0].float() / bases[base][0].float()
            assert (ratio - 1).abs().nan_to_num().max() <= bound  # the distribution stays
        assert len(contents) == 100, dtype  # a cache keyed on contents never hits


def test_an_address_never_holds_the_same_base_twice_in_a_row():
    bases = [[torch.full((1024,), float(k))] for k in range(3)]
    for spread in (0, 4096 * 17):  # the minimum ring, and one whose length divides by 3
        ring = timing._Ring(bases, spread_bytes=spread)
        last: dict[int, int] = {}
        repeats = 0
        for i in range(600):
            base, args = ring.next(i)
            assert torch.equal(args[0], bases[base][0])
            repeats += last.get(args[0].data_ptr()) == base
            last[args[0].data_ptr()] = base
            ring.hold(args[0] + 1)
        assert repeats == 0 and 1 < len(last) < 300  # addresses were reused, never with old values


def test_held_outputs_stay_within_the_budget_when_they_are_larger_than_inputs():
    bases = [[torch.zeros(4)] for _ in range(3)]  # 16-byte inputs
    ring = timing._Ring(bases, spread_bytes=4096)
    assert ring.slots == timing._Ring.MAX_SLOTS
    for i in range(10):
        ring.next(i)
        ring.hold(torch.zeros(512))  # 2 KiB outputs: two fit in the budget
    assert len(ring.outputs) == 2


def _performance_with_static_flags(flags: list[dict]):
    from types import SimpleNamespace

    from runners import performance

    made = performance.Performance.__new__(performance.Performance)
    static = GateResult(name="static", status="pass", details={"flags": flags})
    made.grading = SimpleNamespace(result=SimpleNamespace(gate=lambda name: static))
    made.hardware = None
    return made


def test_cuda_settings_hold_the_call_behind_the_flush(monkeypatch):
    """Candidates and baselines on CUDA are timed behind the queue hold (timing protocol 4), and
    compute-bound problems warm up longer; the CPU path has no flush to hide behind and keeps
    no hold."""
    from types import SimpleNamespace

    from runners import environment, performance

    monkeypatch.setattr(environment, "l2_bytes", lambda: 50 * 2**20)
    made = _performance_with_static_flags([{"rule": "file_write", "line": 3, "message": "..."}])
    made.problem = SimpleNamespace(time_cap_s=None, regime="memory")
    made.device = "cuda"
    cuda = made._settings()
    assert not cuda.idle_start
    assert cuda.hold_timeout_us == performance.HOLD_TIMEOUT_US == 5000.0
    assert cuda.flush_bytes == performance.FLUSH_MIN_BYTES
    assert cuda.warmup_s == timing.Settings().warmup_s == 0.1
    for regime in ("compute", "roofline", "speedup"):
        made.problem = SimpleNamespace(time_cap_s=None, regime=regime)
        assert made._settings().warmup_s == performance.COMPUTE_WARMUP_S == 0.5
    made.device = "cpu"
    assert made._settings().hold_timeout_us == 0
    assert timing.PROTOCOL == 5


def test_a_solution_with_its_own_streams_is_timed_from_an_idle_device(monkeypatch):
    """Work on a stream of the solution's own could run during the flush or the hold, before
    the window opens: the static gate's side_stream flag makes every timed call start on an
    idle device, without a hold."""
    from types import SimpleNamespace

    from runners import environment

    monkeypatch.setattr(environment, "l2_bytes", lambda: 50 * 2**20)
    made = _performance_with_static_flags([{"rule": "side_stream", "line": 9, "message": "..."}])
    made.problem = SimpleNamespace(time_cap_s=None, regime="memory")
    made.device = "cuda"
    assert made._settings().idle_start


class _FakeDevice:
    """One time axis in microseconds: the host's time, the timed stream's queued work, other
    streams' work still running, and a host that takes `wake_us` to come back from a synchronize
    and land its next event."""

    def __init__(self, call_us: float, side_us: float, wake_us: float):
        self.call_us, self.side_us, self.wake_us = call_us, side_us, wake_us
        self.now = self.stream_end = self.side_end = 0.0

    def call(self, args):
        self.stream_end = max(self.now, self.stream_end) + self.call_us
        self.side_end = self.stream_end + self.side_us  # work left running on another stream

    def record(self, event):
        event.t = max(self.now, self.stream_end)

    def synchronize(self):
        self.now = max(self.now, self.stream_end, self.side_end) + self.wake_us


def _clock_on(monkeypatch, device: _FakeDevice) -> timing._CudaClock:
    from types import SimpleNamespace

    monkeypatch.setattr(timing, "_Event", lambda enable_timing: SimpleNamespace(t=None))
    monkeypatch.setattr(timing, "_record", device.record)
    monkeypatch.setattr(timing, "_synchronize", device.synchronize)
    monkeypatch.setattr(timing, "_elapsed", lambda a, b: (b.t - a.t) / 1e3)
    monkeypatch.setattr(timing, "_perf_counter", lambda: device.now / 1e6)
    monkeypatch.setattr(timing.torch, "empty", lambda *a, **k: torch.zeros(1))  # the flush
    return timing._CudaClock(flush_bytes=1)


@pytest.mark.parametrize("wake_us", [2.0, 60.0, 400.0])
def test_a_host_slow_to_wake_from_a_synchronize_is_not_escaped_work(monkeypatch, wake_us):
    """The span until the device is idle leaves out the host's own delay after a synchronize,
    measured on the idle device: on the H100 one fresh process took 60 us there at the median,
    and an honest 3.6 us call read as 65 us of escaped work (timing_rejected)."""
    from runners.scoring import timing_problems

    device = _FakeDevice(call_us=3.6, side_us=0.0, wake_us=wake_us)
    clock = _clock_on(monkeypatch, device)
    event, host, span, _ = clock.time(device.call, [])
    assert event == pytest.approx(0.0036) and span == pytest.approx(0.0036)
    reply = {"event_ms": [event] * 50, "span_ms": [span] * 50, "host_ms": [host] * 50}
    assert timing_problems(reply, parent_wall_s=10.0) == []


def test_work_left_on_another_stream_still_shows_in_the_span(monkeypatch):
    from runners.scoring import timing_problems

    device = _FakeDevice(call_us=3.6, side_us=500.0, wake_us=60.0)
    clock = _clock_on(monkeypatch, device)
    event, host, span, _ = clock.time(device.call, [])
    assert event == pytest.approx(0.0036) and span == pytest.approx(0.5036)
    reply = {"event_ms": [event] * 50, "span_ms": [span] * 50, "host_ms": [host] * 50}
    (problem,) = timing_problems(reply, parent_wall_s=10.0)
    assert "503.6 us until the device was idle against 3.6 us timed" in problem


def test_compute_bound_problems_take_more_rounds_on_cuda_only():
    """An unlocked SM clock puts whole rounds on one step or another: compute-bound problems
    average more of them (docs/benchmarks.md, "Six rounds for compute-bound problems");
    memory-bound ones take two, more where those disagree; the CPU one."""
    from types import SimpleNamespace

    from runners import performance

    made = performance.Performance.__new__(performance.Performance)
    made.device = "cuda"
    for regime, rounds in (("memory", 2), ("compute", 6), ("roofline", 6), ("speedup", 6)):
        made.problem = SimpleNamespace(regime=regime)
        assert made._rounds() == rounds
    made.device = "cpu"
    made.problem = SimpleNamespace(regime="compute")
    assert made._rounds() == performance.TIMING_ROUNDS["cpu"] == 1


def test_outputs_sharing_storage_across_calls_are_kept_as_copies():
    """The kept calls' outputs are each their own call's, though the call returns one buffer."""
    buffer = torch.empty(4)

    def call(args):
        return torch.mul(args[0], 2.0, out=buffer)

    bases = [[torch.full((4,), float(value))] for value in (1, 2, 3)]
    settings = timing.Settings(warmup=2, min_samples=6, max_samples=6, vary_seed=11)
    samples = timing.measure(call, bases, device="cpu", settings=settings)
    assert samples.aliased
    for base, number, outputs in samples.kept:
        (expected,) = timing.vary(timing.fresh_copy(bases[base]), 11, number)
        assert torch.equal(outputs, expected * 2.0)


def test_outputs_in_fresh_storage_are_not_marked_aliased():
    settings = timing.Settings(warmup=2, min_samples=6, max_samples=6)
    samples = timing.measure(
        lambda a: a[0] * 2.0, [[torch.ones(4)]], device="cpu", settings=settings
    )
    assert not samples.aliased


def test_a_slow_reference_gives_its_counts_up_after_the_count_cap():
    """A reference of 50 ms a call with the counts of a fast one (10 warm-ups, 50 samples) takes
    3 s; past count_cap_s its counts give way: a couple of warm-ups, MIN_SLOW_SAMPLES samples."""
    calls = []

    def slow(args):
        calls.append(1)
        time.sleep(0.05)

    settings = timing.Settings(warmup=10, min_samples=50, cap_s=0.2, count_cap_s=0.1)
    samples = timing.measure(slow, [[1]], device="cpu", settings=settings)

    assert len(samples.event_ms) == timing.MIN_SLOW_SAMPLES
    assert len(calls) - len(samples.event_ms) <= 3  # the warm-up gave way after 0.1 s
    uncapped = timing.Settings(warmup=2, min_samples=8, cap_s=0.2)
    assert len(timing.measure(slow, [[1]], device="cpu", settings=uncapped).event_ms) == 8


def test_fast_calls_keep_their_counts_under_the_count_cap():
    settings = timing.Settings(warmup=10, min_samples=50, max_samples=60, cap_s=5.0)
    capped = dataclasses.replace(settings, count_cap_s=2.0, rse_target=0.0)
    calls = []
    samples = timing.measure(lambda args: calls.append(1), [[1]], device="cpu", settings=capped)
    assert len(samples.event_ms) == 60 and len(calls) == 70


def test_the_count_cap_never_asks_for_more_samples_than_the_settings_do():
    """The CPU's references take 3 samples; past the cap they still take 3, not 5."""
    settings = timing.Settings(warmup=1, min_samples=3, cap_s=0.05, count_cap_s=0.01)
    samples = timing.measure(lambda args: time.sleep(0.03), [[1]], device="cpu", settings=settings)
    assert len(samples.event_ms) == 3


@pytest.mark.parametrize(("gap_s", "warmed_s"), [(0.01, 0.1), (0.5, 0.5)])
def test_a_timing_soon_after_another_warms_up_for_the_busy_warmup_only(
    monkeypatch, gap_s, warmed_s
):
    """Shapes timed back to back: the device did not idle long enough for its clock to rise, so
    a timing that starts within `busy_gap_s` of the last one's end warms up for `busy_warmup_s`;
    after a longer gap, for the whole `warmup_s`. The fake device's calls take 1 ms."""
    device = _FakeDevice(call_us=1000.0, side_us=0.0, wake_us=2.0)
    clock = _clock_on(monkeypatch, device)
    monkeypatch.setattr(timing, "_clock", lambda *args: clock)
    monkeypatch.setattr(timing, "_ended", [None])
    monkeypatch.setattr(timing, "_busy_since", [None])
    settings = timing.Settings(
        warmup=2, warmup_s=0.5, busy_gap_s=0.2, busy_warmup_s=0.1, min_samples=5, max_samples=5
    )
    bases = [[torch.ones(4)], [torch.ones(4)]]

    def measure():
        return timing.measure(device.call, bases, device="cuda", settings=settings)

    first = measure()
    assert first.idle_before_s is None
    assert first.warmup_took_s == pytest.approx(0.5, abs=0.005)  # nothing timed before it
    device.now += gap_s * 1e6  # the host's work between two shapes
    second = measure()
    assert second.idle_before_s == pytest.approx(gap_s, abs=1e-3)
    assert second.warmup_took_s == pytest.approx(warmed_s, abs=0.005)
    assert second.to_reply()["idle_before_s"] == second.idle_before_s


def test_the_busy_gemm_runs_only_where_the_busy_warm_up_applies(monkeypatch):
    """Memory-bound and CPU timings take no busy GEMM: nothing starts, and the last timing's
    end stays where `measure` put it."""
    monkeypatch.setattr(timing, "_ended", [12.0])
    busy = timing.BusyDevice()
    for settings, device in [
        (timing.Settings(busy_gap_s=0.0), "cuda"),
        (timing.Settings(busy_gap_s=0.01), "cpu"),
    ]:
        busy.start(settings.busy_gap_s, device)
        assert busy.stop() == ""
    assert timing._ended == [12.0]


def test_a_busy_gemm_that_cannot_run_says_why_and_the_gap_counts_from_the_last_timing(
    monkeypatch,
):
    """Where the GEMM cannot run (here: no CUDA at all), `stop` says why and the next shape's
    gap is counted from the last timing's end, so it takes the whole warm-up."""
    monkeypatch.setattr(timing, "_ended", [12.0])
    busy = timing.BusyDevice()
    busy.start(0.01, "cuda")
    error = busy.stop()
    assert "cuda" in error.lower()
    assert timing._ended == [12.0]
    assert busy.stop() == ""  # stopped once: nothing left to stop


@pytest.mark.parametrize(("busy_for_s", "warmed_s"), [(0.3, 0.2), (2.0, 0.1), (0.0, 0.5)])
def test_the_time_the_device_was_busy_before_a_timing_counts_as_its_warm_up(
    monkeypatch, busy_for_s, warmed_s
):
    """A timing that starts right after the device was busy (the engine's GEMM in a fresh
    round's process, say) warms up for what `warmup_s` leaves of that busy time, and for
    `busy_warmup_s` of its own calls at least: every sample follows `warmup_s` of work."""
    device = _FakeDevice(call_us=1000.0, side_us=0.0, wake_us=2.0)
    clock = _clock_on(monkeypatch, device)
    monkeypatch.setattr(timing, "_clock", lambda *args: clock)
    device.now = 100e6
    now_s = device.now / 1e6
    monkeypatch.setattr(timing, "_ended", [now_s - 0.001] if busy_for_s else [None])
    monkeypatch.setattr(timing, "_busy_since", [now_s - busy_for_s])
    settings = timing.Settings(
        warmup=2, warmup_s=0.5, busy_gap_s=0.01, busy_warmup_s=0.1, min_samples=5, max_samples=5
    )
    samples = timing.measure(device.call, [[torch.ones(4)]], device="cuda", settings=settings)
    assert samples.warmup_took_s == pytest.approx(warmed_s, abs=0.005)
    # The busy time goes on from where it began; a timing after an idle device starts it.
    assert timing._busy_since == [now_s - busy_for_s if busy_for_s else now_s]


def test_a_busy_gemm_that_could_not_start_a_thread_says_why_once(monkeypatch):
    """A thread the process cannot start (its limit on processes reached) leaves the timing as
    if no GEMM ran, and the next request finds nothing left to stop."""

    class NoThread:
        def __init__(self, **kwargs):
            pass

        def start(self):
            raise RuntimeError("can't start new thread")

    monkeypatch.setattr(timing, "_Thread", NoThread)
    monkeypatch.setattr(timing, "_ended", [12.0])
    busy = timing.BusyDevice()
    busy.start(0.01, "cuda")
    assert busy.stop() == "RuntimeError: can't start new thread"
    assert busy.stop() == "" and timing._ended == [12.0]


def test_start_returns_once_the_gemm_has_launched(monkeypatch):
    """`start` hands the GIL to the GEMM's thread until its first product is queued: the caller
    would otherwise keep it (writing kept outputs) or ask for the next timing first."""
    order = []

    def run(self):
        time.sleep(0.05)  # the thread's start, its stream, its first launch
        order.append("launched")
        self._launched.set()
        self._stop.wait()

    monkeypatch.setattr(timing, "BUSY_START_S", 30.0)
    monkeypatch.setattr(timing.BusyDevice, "_run", run)
    busy = timing.BusyDevice()
    busy.start(0.01, "cuda")
    order.append("returned")
    assert busy.stop() == ""  # no outcome left: nothing counted
    assert order == ["launched", "returned"]


@pytest.mark.parametrize(("stall_ms", "idle_ms"), [(4.0, 0.0), (20.0, 13.6)])
def test_the_busy_gemm_rides_out_a_gil_stall_on_its_queue(monkeypatch, stall_ms, idle_ms):
    """The GEMM keeps BUSY_QUEUED products (0.2 ms each) queued ahead: a host stall shorter than
    the queue (the thread waiting for the GIL) leaves the device busy, a longer one idles it for
    the difference, which the events measure between the two products around it."""
    host, device, records = [0.0], [0.0], [0]  # ms, and events recorded (two a product)

    class Stamp:
        def __init__(self, enable_timing=True):
            self.t = None

    def record(event, stream):  # completes when the device reaches it
        records[0] += 1
        if records[0] == 101:  # the thread waited for the GIL before its 51st product
            host[0] += stall_ms
        event.t = device[0] = max(device[0], host[0])

    def mm(a, b, out):
        device[0] += 0.2
        host[0] += 0.01

    def synchronize(event):
        host[0] = max(host[0], event.t)

    class StopAfter:
        def is_set(self):
            return records[0] >= 400

    monkeypatch.setattr(timing, "_Event", Stamp)
    monkeypatch.setattr(timing, "_record", record)
    monkeypatch.setattr(timing, "_mm", mm)
    monkeypatch.setattr(timing, "_event_synchronize", synchronize)
    monkeypatch.setattr(timing, "_elapsed", lambda a, b: b.t - a.t)
    monkeypatch.setattr(timing, "_perf_counter", lambda: host[0] / 1e3)
    busy = timing.BusyDevice()
    busy._stop = StopAfter()

    busy._loop(None, None, None)

    started, ended, idle_s = busy._outcome[0]
    assert started == pytest.approx(0.0, abs=1e-4)  # the first launch, on the host's clock
    assert idle_s * 1e3 == pytest.approx(idle_ms, abs=0.1)
    assert ended == pytest.approx(200 * 0.2e-3 + idle_ms / 1e3, abs=1e-4)


@pytest.mark.parametrize(
    ("idle_s", "counted"), [(0.004, True), (0.03, False)], ids=["busy", "starved"]
)
def test_a_busy_span_counts_only_where_the_device_never_idled(monkeypatch, idle_s, counted):
    """The GEMM's events say how long the device idled between two products: a span where it
    never idled for the busy gap counts (the next timing's gap and busy time run from it); one
    where its thread was starved of the GIL for longer does not."""
    monkeypatch.setattr(timing, "_ended", [10.0])
    monkeypatch.setattr(timing, "_busy_since", [9.0])
    busy = timing.BusyDevice()
    busy._gap_s = 0.01
    busy._outcome = [(10.005, 10.8, idle_s)]  # what the thread left: started, ended, idle
    message = busy.stop()
    if counted:
        assert message == "" and timing._ended == [10.8] and timing._busy_since == [9.0]
    else:
        assert message == "the device idled 30.0 ms between two busy GEMMs in 0.795 s"
        assert timing._ended == [10.0] and timing._busy_since == [9.0]
