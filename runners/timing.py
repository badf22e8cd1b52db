"""The timing loop shared by the candidate process and the reference process.

The clock functions are captured when this module is imported, which the candidate process does
before it imports the solution: later monkey-patching of torch or time cannot reach the loop, and
`timers_intact` reports it.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from runners.hold import QueueHold

_perf_counter = time.perf_counter
_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed = torch.cuda.Event.elapsed_time
_query = torch.cuda.Event.query
_no_grad = torch.no_grad
# `BusyDevice`'s work: captured like the clocks, since it runs after the solution
# was imported and before its kept outputs are written, where none of the solution's code may run.
_mm = torch.mm
_randn = torch.randn
_new_stream = torch.cuda.Stream
_on_stream = torch.cuda.stream
_event_synchronize = torch.cuda.Event.synchronize
_stream_synchronize = torch.cuda.Stream.synchronize
_Thread = threading.Thread

# Tensors cross between the engine's processes through files in memory; a zip CRC over
# gigabytes costs seconds and guards against nothing on one machine.
if hasattr(torch.serialization, "set_crc32_options"):
    torch.serialization.set_crc32_options(False)

_CAPTURED = {
    "time.perf_counter": (time, "perf_counter", _perf_counter),
    "torch.cuda.synchronize": (torch.cuda, "synchronize", _synchronize),
    "torch.cuda.Event": (torch.cuda, "Event", _Event),
    "torch.cuda.Event.record": (torch.cuda.Event, "record", _record),
    "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time", _elapsed),
    "torch.cuda.Event.query": (torch.cuda.Event, "query", _query),
    # The hold: a solution that kept it from releasing would stretch it to its timeout.
    "runners.hold.QueueHold.wait": (QueueHold, "wait", QueueHold.wait),
    "runners.hold.QueueHold.release": (QueueHold, "release", QueueHold.release),
}


def timers_intact() -> list[str]:
    """Names of captured timing functions that were replaced since import."""
    return [name for name, (owner, attr, fn) in _CAPTURED.items() if getattr(owner, attr) is not fn]


# What a reported median means: bump when the loop changes it, so that reference timings cached
# under an older protocol are measured again (it is part of every baseline_key).
# 1: engine 0.1 (one measurement); 2: engine 0.2 (spread inputs, rounds, median of medians);
# 3: a hold kernel between the flush and the start event on CUDA; 4: the hold waits until the
# host has queued the call (runners.hold), and compute-bound problems warm up for 0.5 s;
# 5: no hold for a call that waits on the device inside itself, an idle device at the start of
# a call that uses its own streams, outputs that share storage across calls kept as copies.
PROTOCOL = 5
# The last calls of a timing whose outputs come back for the re-check (consecutive calls use
# different bases and ring slots); the reference process refuses a file that holds more.
KEPT_CALLS = 2
# The fewest samples of a reference timing whose counts gave way (Settings.count_cap_s), or the
# settings' own minimum where that is smaller (the CPU's 3).
MIN_SLOW_SAMPLES = 5


@dataclass
class Settings:
    warmup: int = 10
    # On CUDA the warm-up also lasts at least this long, so the clocks have ramped up from an
    # idle gap (loading the shape's inputs, say) before the first recorded sample.
    warmup_s: float = 0.1
    # On CUDA, a timing that starts less than this long after the device was last busy in this
    # process (the previous timing, or `BusyDevice`'s GEMM after it) counts the time the device
    # has been busy since it last idled as warm-up: it warms up for what `warmup_s` leaves, at
    # least `busy_warmup_s` of its own calls. So every sample follows `warmup_s` of work, and a
    # shape timed after others warms up for `busy_warmup_s` only. 0: every timing warms up for
    # `warmup_s`.
    busy_gap_s: float = 0.0
    busy_warmup_s: float = 0.1
    min_samples: int = 50
    max_samples: int = 5000
    cap_s: float = 2.0
    rse_target: float = 0.003  # stricter than the 0.5% the protocol asks: samples are cheap
    flush_bytes: int = 0
    # On CUDA, the device waits between the flush and the start event until the host has queued
    # the whole call, for at most this long (runners.hold; the engine sets it on CUDA:
    # runners.performance.HOLD_TIMEOUT_US). 0: no hold.
    hold_timeout_us: float = 0.0
    # On CUDA, the device is synchronized between the flush and the start event and there is no
    # hold: for solutions that run work on streams of their own, which could otherwise start
    # during the flush or the hold, before the window opens. Launch latency then counts, as it
    # does in triton.testing.do_bench.
    idle_start: bool = False
    # Distinct input copies (and, within the same budget, candidate outputs) kept alive, up to
    # this many bytes, so the timed calls see many places in memory rather than a handful. On
    # the H100 this did not measurably change reproducibility (docs/benchmarks.md, "History: how
    # the timing protocol got here", "Input spread, the L2 flush and the synchronize");
    # the shipped loop was measured with it. 0 keeps the minimum ring (one more than the bases).
    spread_bytes: int = 0
    # Candidate timing only: with a seed, every call's floating inputs are its base's values
    # scaled elementwise by fresh noise (`vary`), so no two calls ever see the same contents and
    # a cache keyed on contents or addresses cannot hit with a right answer. The parent draws
    # the seed per round and has the reference recompute the kept calls' outputs from it.
    vary_seed: int | None = None
    # Reference timings only (the baselines a speedup is over): past this many seconds the
    # warm-up's and the samples' counts give way (at least MIN_SLOW_SAMPLES samples are taken).
    # A reference of a second a call (KDA's chunk loop in eager PyTorch) took 10 warm-up calls
    # and 50 samples, a minute a shape; its speedups need no such precision. Fast references
    # reach both counts long before it and are timed as before. None: the counts hold.
    count_cap_s: float | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        return cls(**data)


@dataclass
class Samples:
    event_ms: list[float] = field(default_factory=list)
    host_ms: list[float] = field(default_factory=list)
    span_ms: list[float] = field(default_factory=list)
    # (base input index, call number, outputs) of the last calls; the call number, counted from
    # 0 over warm-up and samples, is what `vary` derived the call's inputs from.
    kept: list[tuple[int, int, Any]] = field(default_factory=list)
    # Launches of the solution's own kernels during each sample (runners.launches); empty when
    # the process does not count them (the reference's baselines).
    own_launches: list[int] = field(default_factory=list)
    # Which hold ran ("queue", or "fixed" where the flag kernel could not be built, and why).
    hold: str = ""
    hold_error: str = ""
    # The call waited on the device inside itself (`.item()`, a synchronize), so the device
    # passed the hold before the host released it: the hold was dropped and timing restarted.
    hold_dropped: bool = False
    # Successive calls returned outputs in the same storage (a buffer the module keeps): each
    # timed call's outputs were copied after its window, so the kept ones are its own.
    aliased: bool = False
    # How long the device had been idle, as far as this process knows, when the warm-up began
    # (None: no earlier timing in the process), and how long the warm-up lasted.
    idle_before_s: float | None = None
    warmup_took_s: float = 0.0

    def to_reply(self) -> dict[str, Any]:
        reply: dict[str, Any] = {
            "event_ms": self.event_ms,
            "host_ms": self.host_ms,
            "span_ms": self.span_ms,
        }
        if self.hold:
            reply |= {"hold": self.hold, "hold_error": self.hold_error}
        reply |= {"hold_dropped": self.hold_dropped, "aliased": self.aliased}
        reply |= {"idle_before_s": self.idle_before_s, "warmup_took_s": self.warmup_took_s}
        return reply | ({"own_launches": self.own_launches} if self.own_launches else {})


def relative_standard_error(values: Sequence[float]) -> float:
    if len(values) < 2:
        return math.inf
    mean = statistics.fmean(values)
    return statistics.stdev(values) / math.sqrt(len(values)) / mean if mean > 0 else math.inf


def fresh_copy(args: Sequence[Any]) -> list[Any]:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


# The relative size of `vary`'s noise: above the rounding step of every floating dtype the
# engine feeds (bf16's is 2**-8, fp8 e4m3's 2**-3), so that each element's value changes, and
# small enough to keep an input's distribution what the problem chose.
_VARY_MIN = 2**-6


def vary(args: Sequence[Any], seed: int, call: int) -> list[Any]:
    """Scale every floating input elementwise by 1 + noise, in place, reproducibly.

    The noise depends only on (seed, call, input position), never on where a tensor lives, so
    the reference process rebuilds a kept call's exact inputs from its base. Integer inputs
    (indices, routing, block tables) stay: they are structure the problem fixed.
    """
    for position, value in enumerate(args):
        floating = isinstance(value, torch.Tensor) and value.is_floating_point()
        if not floating or not value.numel():
            continue
        generator = torch.Generator(device=value.device)
        generator.manual_seed((seed * 1_000_003 + call * 1_009 + position) % 2**63)
        # One temporary the size of the input in fp32 (fp64 for fp64 inputs), worked in place:
        # inputs run to gigabytes, and each call of the timing loop varies them.
        wide = torch.float64 if value.dtype == torch.float64 else torch.float32
        factor = torch.rand(value.shape, generator=generator, device=value.device, dtype=wide)
        size = max(_VARY_MIN, 2 * torch.finfo(value.dtype).eps)
        factor.mul_(2.0 * size).add_(1.0 - size)
        # fp8 takes part in no arithmetic: widened first (its inputs are a byte an element).
        value.copy_(factor.mul_(value if value.element_size() > 1 else value.to(wide)))
    return list(args)


class _Ring:
    """Input slots that the calls rotate through: call i gets slot i % slots, refilled with a
    base's values (varied by `vary` when a seed is set) before the call.

    Addresses and tensor objects repeat every `slots` calls, each time holding new contents: a
    base other than the one the slot held last, and with a seed values no call saw before. A
    cache keyed on addresses, objects or contents therefore returns stale outputs, which the
    re-check of the timed calls' outputs catches. With a byte budget there are more slots, and
    as many outputs kept alive, so the calls spread over many places in memory.
    """

    MAX_SLOTS = 64

    def __init__(
        self, bases: Sequence[Sequence[Any]], spread_bytes: int = 0, vary_seed: int | None = None
    ):
        self.bases = bases
        self.spread_bytes = spread_bytes
        self.vary_seed = vary_seed
        self.slots = len(bases) + 1
        per_call = _tensor_bytes(bases[0]) if bases else 0
        if spread_bytes and per_call:
            self.slots = max(self.slots, min(self.MAX_SLOTS, spread_bytes // per_call))
        self.buffers: list[list[Any] | None] = [None] * self.slots
        self.last_base: list[int | None] = [None] * self.slots
        self.outputs: deque[Any] | None = None if spread_bytes else deque(maxlen=0)

    def next(self, i: int) -> tuple[int, list[Any]]:
        slot = i % self.slots
        base = i % len(self.bases)
        if base == self.last_base[slot]:
            base = (base + 1) % len(self.bases)
        if self.buffers[slot] is None:
            self.buffers[slot] = [
                torch.empty_like(a) if isinstance(a, torch.Tensor) else a for a in self.bases[base]
            ]
        args = [
            shell.copy_(value) if isinstance(shell, torch.Tensor) else value
            for shell, value in zip(self.buffers[slot], self.bases[base], strict=True)
        ]
        self.last_base[slot] = base
        if self.vary_seed is not None:
            vary(args, self.vary_seed, i)
        return base, args

    def hold(self, out: Any) -> None:
        """Keep an output alive so the next call's output lands somewhere else too."""
        if self.outputs is None:  # sized by the first output: as many as fit the budget
            room = self.spread_bytes // max(_tensor_bytes(out), 1)
            self.outputs = deque(maxlen=max(1, min(self.slots, room)))
        self.outputs.append(out)


def _tensor_bytes(values: Any) -> int:
    items = values if isinstance(values, list | tuple) else [values]
    return sum(a.nbytes for a in items if isinstance(a, torch.Tensor))


def measure(
    call: Callable[[list[Any]], Any],
    bases: Sequence[Sequence[Any]],
    *,
    device: str,
    settings: Settings,
    launches: Callable[[], int] | None = None,
) -> Samples:
    """Time `call` until the mean's relative standard error reaches the target or the cap.

    The host work between samples is O(1) (a running mean and variance, not a recomputed
    `statistics.stdev`, which costs milliseconds over thousands of samples): a long idle gap
    between two short calls lets the GPU lower its clocks mid-measurement.

    `launches`, where given, returns a running count of the solution's own kernel launches; its
    growth over each sample is recorded in `Samples.own_launches`.
    """
    spread = settings.spread_bytes if device == "cuda" else 0
    ring = _Ring(bases, spread, settings.vary_seed)
    clock = _clock(device, settings)
    samples = Samples()
    running = _Running()
    keep = min(KEPT_CALLS, len(bases))
    # Varied timing goes on until every slot has been refilled, so the kept calls reuse
    # addresses (with new contents): what a cache keyed on them would get wrong.
    min_samples = settings.min_samples
    if settings.vary_seed is not None:
        min_samples = max(min_samples, ring.slots + keep)
    now = _perf_counter()
    idle_s = None if _ended[0] is None else now - _ended[0]
    samples.idle_before_s = idle_s
    warmup_s = settings.warmup_s if device == "cuda" else 0.0
    busy = idle_s is not None and idle_s < settings.busy_gap_s
    if busy:
        busy_s = now - _busy_since[0]
        warmup_s = max(min(warmup_s, settings.busy_warmup_s), warmup_s - busy_s)
    previous: set[int] = set()  # where the last call's outputs live
    with _no_grad():
        started = _perf_counter()
        if not busy:
            _busy_since[0] = started
        i = 0
        while _warming(settings, i, _perf_counter() - started, warmup_s):
            out = clock.time(call, ring.next(i)[1])[3]
            clock.restarted()
            previous = _note_aliasing(samples, previous, out)
            i += 1
        samples.warmup_took_s = _perf_counter() - started
        started = _perf_counter()
        for _ in range(settings.max_samples):
            base, args = ring.next(i)
            before = launches() if launches else 0
            event, host, span, out = clock.time(call, args)
            if clock.restarted():  # the hold was dropped: no sample taken behind it is kept
                samples, running = _restarted(samples), _Running()
                i += 1
                started = _perf_counter()
                continue
            aliased = samples.aliased
            previous = _note_aliasing(samples, previous, out)
            if samples.aliased and not aliased:  # seen only now: the kept outputs are this call's
                samples.kept = []
            if samples.aliased:  # the next call overwrites these outputs: keep a copy
                out = _copied(out)
            if launches:
                samples.own_launches.append(launches() - before)
            samples.event_ms.append(event)
            samples.host_ms.append(host)
            samples.span_ms.append(span)
            samples.kept = [*samples.kept, (base, i, out)][-keep:]
            i += 1
            ring.hold(out)
            running.add(event)
            if _converged(running, settings, _perf_counter() - started, min_samples):
                break
    _ended[0] = _perf_counter()  # the clock synchronized after the last call: idle from now
    if isinstance(clock, _CudaClock) and clock.kind:
        samples.hold, samples.hold_error = clock.kind, clock.hold_error
    samples.hold_dropped = clock.dropped
    return samples


# When the device was last busy in this process (the last timing's end, or `BusyDevice`'s), and
# since when it has been busy without a gap (`Settings.busy_gap_s`), on the captured clock.
_ended: list[float | None] = [None]
_busy_since: list[float | None] = [None]

# `BusyDevice`'s GEMM: square bf16 operands of this side (32 MiB each), a product of about 0.2 ms
# on an H100 or H200, at most BUSY_QUEUED of them (about 6 ms) queued ahead of the device. The
# thread needs the GIL for each launch, and while the main thread runs Python (a model's
# constructor, say) it gets it once per 5 ms switch interval at best: a queue shorter than that
# lets the device idle between products (with 4 queued, fp8_gemm's spans between shapes kept it
# busy for 68 % of 67 ms on an H200; docs/benchmarks.md, "Cost of a grade", Session 51). Once
# stopped, the device finishes what is queued before the next timing starts. It stops by itself
# after BUSY_LIMIT_S, where no next timing came (a parent gone, say).
BUSY_SIDE = 4096
BUSY_QUEUED = 32
BUSY_LIMIT_S = 5.0
# `start` waits this long at most for the first product's launch: the new thread needs the GIL,
# and the caller would otherwise keep it (writing kept outputs) or ask for the next timing before
# the GEMM began (a fresh process whose reads ended as its first timing came), so the device
# idled and the next shape warmed up for the whole `warmup_s` (Session 51: most fp8_gemm rounds).
BUSY_START_S = 0.05


class BusyDevice:
    """Keeps the device busy with a GEMM of the engine's own between two timings of a process.

    A compute-bound timing counts the time the device has been busy before it as warm-up
    (`measure`, `Settings.busy_gap_s`): a shape timed right after another warms up for
    `busy_warmup_s` only. Between two shapes the candidate writes the first one's kept outputs
    (fp8_gemm's largest two: 256 MiB, 22-40 ms), then builds the next one's model (moe_swiglu's
    expert weights: 0.2-1.0 s), which let the clock rise and so cost each shape the whole
    warm-up; a fresh round's process waits for the last round's re-checks before its first
    shape. `start` once a timing's calls are done, or a fresh process's inputs are read, and
    `stop` right before the next timing's first call: the GEMM, on a stream of its own, keeps
    the device as a shape's calls do in between, and counts as busy time where the device never
    idled between two products for the busy gap or longer (`Settings.busy_gap_s`, the gap after
    which a timing counts as following an idle device; events around each product say when the
    device worked). No code of the solution runs while the kept outputs are written: the GEMM
    calls only functions captured at import.

    Only where the busy warm-up applies (CUDA, a busy gap set). Where the GEMM cannot run (its
    operands do not fit beside the solution's memory, say) or left the device idle longer,
    `stop` says why and the next timing counts its gap from the last one, as without it.
    """

    def __init__(self):
        self._operands: tuple | None = None
        self._stream = None
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()
        self._gap_s = 0.0
        self._launched = threading.Event()  # the first product is queued (or the thread ended)
        # (start, end) on the clock and the device's longest idle, or why it did not count
        self._outcome: list = []

    def start(self, busy_gap_s: float, device: str) -> None:
        if device != "cuda" or busy_gap_s <= 0 or self._worker is not None:
            return
        self._stop, self._outcome, self._gap_s = threading.Event(), [], busy_gap_s
        self._launched = threading.Event()
        worker = _Thread(target=self._run, daemon=True)
        try:
            worker.start()
        except RuntimeError as error:  # no thread to be had: `stop` says so
            self._outcome.append(error)
            return
        self._worker = worker
        self._launched.wait(BUSY_START_S)  # the GIL is the thread's until it has launched

    def stop(self) -> str:
        """Stop the GEMM and wait for the device; returns why it did not count as busy time
        ('' if it did, or was not started)."""
        if self._worker is not None:
            self._stop.set()
            self._worker.join()
            self._worker = None
        outcome, self._outcome = (self._outcome or [None])[0], []
        if outcome is None:  # not started, or stopped before its first product
            return ""
        if isinstance(outcome, BaseException):
            return f"{type(outcome).__name__}: {outcome}"[:300]
        started, ended, idle_s = outcome
        if idle_s >= self._gap_s:
            span = ended - started
            return f"the device idled {idle_s * 1e3:.1f} ms between two busy GEMMs in {span:.3f} s"
        if _ended[0] is None or started - _ended[0] >= self._gap_s:  # it began on an idle device
            _busy_since[0] = started
        _ended[0] = ended  # the GEMM's stream synchronized: idle from then
        return ""

    def _run(self) -> None:
        try:
            if self._stream is None:
                self._stream = _new_stream(device="cuda")
            with _no_grad(), _on_stream(self._stream):
                if self._operands is None:
                    # Random operands: a GEMM's power, which sets the clock, grows with its
                    # data's toggling, and one over constants draws less than a shape's calls.
                    self._operands = tuple(
                        _randn(BUSY_SIDE, BUSY_SIDE, dtype=torch.bfloat16, device="cuda")
                        for _ in range(3)
                    )
                self._loop(*self._operands)
        except Exception as error:  # no busy device: the next shape takes the whole warm-up
            self._outcome[:] = [error]
        finally:
            self._launched.set()  # nothing more to wait for, had it not launched
            if self._stream is not None:
                try:
                    _stream_synchronize(self._stream)
                except Exception as error:
                    self._outcome[:] = [error]

    def _loop(self, a, b, out) -> None:
        """GEMMs until stopped, BUSY_QUEUED queued ahead, each between two events; leaves in
        `_outcome` the host's times of the first launch and of the end, and the longest the
        device idled between two products (seconds)."""
        began = started = _perf_counter()
        queued: deque = deque()
        first = last = None
        idle_ms = 0.0

        def done(pair) -> None:
            nonlocal last, idle_ms
            begin, end = pair
            _event_synchronize(end)
            if last is not None:
                idle_ms = max(idle_ms, _elapsed(last, begin))
            last = end

        while not self._stop.is_set() and _perf_counter() - began < BUSY_LIMIT_S:
            begin, end = _Event(enable_timing=True), _Event(enable_timing=True)
            _record(begin, self._stream)
            _mm(a, b, out=out)
            _record(end, self._stream)
            if first is None:  # the device is busy from this launch on
                first, started = begin, _perf_counter()
                self._launched.set()
            queued.append((begin, end))
            if len(queued) > BUSY_QUEUED:
                done(queued.popleft())
        while queued:
            done(queued.popleft())
        if first is not None:
            self._outcome[:] = [(started, _perf_counter(), idle_ms / 1e3)]


def _clock(device: str, settings: Settings) -> _CudaClock | _HostClock:
    if device != "cuda":
        return _HostClock()
    hold = 0.0 if settings.idle_start else settings.hold_timeout_us
    return _CudaClock(settings.flush_bytes, hold, idle_start=settings.idle_start)


def _restarted(samples: Samples) -> Samples:
    return Samples(
        aliased=samples.aliased,
        idle_before_s=samples.idle_before_s,
        warmup_took_s=samples.warmup_took_s,
    )


def _note_aliasing(samples: Samples, previous: set[int], out: Any) -> set[int]:
    """Mark `samples.aliased` where `out` lives where the previous call's outputs did; returns
    where `out` lives."""
    current = output_storages(out)
    samples.aliased = samples.aliased or bool(current & previous)
    return current


def _outputs(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple | list) else [out]


def output_storages(out: Any) -> set[int]:
    """Where a call's tensor outputs live (their storages' addresses; empty ones left out)."""
    return {
        o.untyped_storage().data_ptr()
        for o in _outputs(out)
        if isinstance(o, torch.Tensor) and o.numel()
    }


def _copied(out: Any) -> Any:
    copies = [o.clone() if isinstance(o, torch.Tensor) else o for o in _outputs(out)]
    return copies if isinstance(out, tuple | list) else copies[0]


class _Running:
    """Welford's running mean and variance."""

    def __init__(self):
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def add(self, value: float) -> None:
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)

    def rse(self) -> float:
        if self.n < 2 or self.mean <= 0:
            return math.inf
        return math.sqrt(self.m2 / (self.n - 1)) / math.sqrt(self.n) / self.mean


def _warming(settings: Settings, calls: int, elapsed_s: float, warmup_s: float) -> bool:
    """Whether the warm-up goes on: its count of calls and its time, each at least (the count
    gives way past `count_cap_s`, after one call)."""
    capped = settings.count_cap_s is not None and elapsed_s > settings.count_cap_s and calls
    return (calls < settings.warmup and not capped) or elapsed_s < warmup_s


def _converged(running: _Running, settings: Settings, elapsed_s: float, min_samples: int) -> bool:
    capped = settings.count_cap_s is not None and elapsed_s > settings.count_cap_s
    if running.n < (min(min_samples, MIN_SLOW_SAMPLES) if capped else min_samples):
        return False
    return elapsed_s > settings.cap_s or running.rse() < settings.rse_target


class _CudaClock:
    """Events around one call; L2 flushed before it and the whole device synchronized after.

    `event` spans the call on the current stream. `span` runs from the start event to an event
    recorded after a device-wide synchronize, so work escaping to other streams shows up as the
    gap between the two; less the host's own delay between a synchronize returning and its next
    event landing, measured the same way on the idle device right after (`idle`). That delay is
    the process's, not the call's: in one process on the H100 it was 60 us at the median, and a
    3.6 us call read as 65 us of escaped work. No work of the call can widen that measurement:
    the synchronize before it waited for everything queued, and only a host thread (refused by
    the static gate) could queue more. With a hold, the device waits after the flush until the
    host has queued the call and its end event (runners.hold), so the window holds no launch
    latency.

    A call that waits on the device inside itself (`.item()`, a synchronize) lets the device
    pass the hold only at its timeout, and then reads slower than without it (a paged-attention
    decode calling `seq_lens.max().item()` read 231 us behind the hold, 128 us without it and
    105 us in do_bench on the H100; docs/peer_runs.md). The start event has then completed
    before the host releases the hold. A call may do that once for reasons of its own (the
    allocator growing, a library loading a kernel module: both synchronize), so the clock drops
    the hold only after WAITS_TO_DROP calls in a row did it, for the rest of the timing, and
    `restarted` says so once, so that no sample taken behind it is kept.
    """

    WAITS_TO_DROP = 3

    def __init__(self, flush_bytes: int, hold_timeout_us: float = 0.0, idle_start: bool = False):
        self.flush = torch.empty(max(flush_bytes, 1), dtype=torch.uint8, device="cuda")
        self.hold = QueueHold(hold_timeout_us) if hold_timeout_us > 0 else None
        self.kind = self.hold.kind if self.hold else ""
        self.hold_error = ""
        self.idle_start = idle_start
        self.dropped = False
        self._restart = False
        self._waits = 0  # calls in a row that waited on the device
        self.start, self.end, self.after, self.mark, self.woke = (
            _Event(enable_timing=True) for _ in range(5)
        )

    def time(self, call: Callable[[list[Any]], Any], args: list[Any]):
        # No synchronize between the flush and the start event, unless the call's own streams
        # could run before the window: the host queues the call while the device is still
        # flushing, then holding.
        self.flush.zero_()
        if self.idle_start:
            _synchronize()
        hold = self.hold
        if hold:
            hold.wait()
        host_start = _perf_counter()
        _record(self.start)
        try:
            out = call(args)
            _record(self.end)
        finally:
            if hold:
                passed = _query(self.start)  # the device is past the hold: the call waited
                hold.release()
                self.kind, self.hold_error = hold.kind, hold.error
                self._waits = self._waits + 1 if passed else 0
                if self._waits >= self.WAITS_TO_DROP:
                    self.hold, self.dropped, self._restart = None, True, True
        _synchronize()
        host_ms = (_perf_counter() - host_start) * 1e3
        _record(self.after)
        _synchronize()
        _record(self.mark)  # the device is idle: the same path again, with nothing to wait for
        _synchronize()
        _record(self.woke)
        _synchronize()
        idle = _elapsed(self.mark, self.woke)
        return _elapsed(self.start, self.end), host_ms, _elapsed(self.start, self.after) - idle, out

    def restarted(self) -> bool:
        """Whether the hold was dropped by the last call (true once)."""
        restart, self._restart = self._restart, False
        return restart


class _HostClock:
    dropped = False

    def restarted(self) -> bool:
        return False

    def time(self, call: Callable[[list[Any]], Any], args: list[Any]):
        host_start = _perf_counter()
        out = call(args)
        host_ms = (_perf_counter() - host_start) * 1e3
        return host_ms, host_ms, host_ms, out
