"""The hold: between the L2 flush and a timed call's start event, the device waits for the host.

A timed window must hold the call's device work only. If the host is still queuing the call's
launches when the device reaches the start event, the window also holds the host's pace: a call
of 47 µs of device work that takes 250 µs to queue read 47 to 194 µs on the H100 behind a fixed
200 µs spin (docs/benchmarks.md, "Timing protocol 4"). So the device spins on a flag
in pinned host memory, which the host raises once it has queued the whole call and its end
event: the window opens on a fully queued call however long the queuing took. The spin gives up
after a timeout, so a call that waits on the device inside itself (`.item()`, a synchronize)
costs that much idle time per call rather than a deadlock; its window then holds its host time,
as it would without a hold.

Where the flag kernel cannot be built (no Triton, a compiler error), the hold is a fixed spin of
`FALLBACK_CYCLES`, and `kind` says so.
"""

from __future__ import annotations

import torch

# About 200 µs at the H100's 1980 MHz: the fixed spin of timing protocol 3.
FALLBACK_CYCLES = 400_000
_sleep = torch.cuda._sleep

try:
    import triton
    import triton.language as tl
except ImportError:  # CUDA-only engines: the fixed spin
    triton = None


if triton is not None:

    @triton.jit
    def _now():
        return tl.inline_asm_elementwise(
            "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
        )

    @triton.jit
    def _read_host(address):
        # A system-scope load: the host's write reaches it, never a stale cached line.
        return tl.inline_asm_elementwise(
            "ld.relaxed.sys.global.b32 $0, [$1];",
            "=r,l",
            [address],
            dtype=tl.int32,
            is_pure=False,
            pack=1,
        )

    @triton.jit(do_not_specialize=["address", "ticket", "timeout_ns"])
    def arena_hold_for_queue(address, ticket, timeout_ns):
        started = _now()
        while (_read_host(address) != ticket) & (_now() - started < timeout_ns):
            pass


class QueueHold:
    """One flag per timing loop: `wait` queues the spin, `release` lets the device past it."""

    def __init__(self, timeout_us: float):
        self.timeout_ns = int(timeout_us * 1e3)
        self.flag = torch.zeros(1, dtype=torch.int32, pin_memory=True)
        self.view = self.flag.numpy()
        self.address = self.flag.data_ptr()
        self.ticket = 0
        self.kind = "queue" if triton is not None else "fixed"
        self.error = "" if triton is not None else "Triton is not installed"

    def wait(self) -> None:
        self.ticket = (self.ticket + 1) % 2**31
        if self.kind == "queue":
            try:
                arena_hold_for_queue[(1,)](self.address, self.ticket, self.timeout_ns, num_warps=1)
                return
            except Exception as exc:  # any build or launch failure: the fixed spin
                self.kind, self.error = "fixed", f"{type(exc).__name__}: {exc}"[:300]
        _sleep(FALLBACK_CYCLES)

    def release(self) -> None:
        self.view[0] = self.ticket
