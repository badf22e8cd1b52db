"""Correctness comparison of outputs loaded without candidate code: in the trusted parent for the
correctness gates and the starter's held-out check, in the reference process for the re-check of
timed calls. All three call `compare_call`, with the input set's rules
(`runners.problem.Problem.tolerance_for`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class Comparison:
    correct: bool = True
    # None until values are compared: an output of the wrong shape, dtype or count has no error
    # to report (0 would read as exact)
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    mismatches: int = 0
    worst_index: list[int] | None = None
    errors: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.correct = False
        self.errors.append(message)

    @property
    def error(self) -> str | None:
        return "; ".join(self.errors[:3]) if self.errors else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form in which the reference process replies with a re-check."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Comparison:
        return cls(**data)


def release_device_memory(device: str) -> None:
    """Hand the allocator's cached blocks back to the device, which the engine's three processes
    share: after preparing moe-sized shapes the reference process held 38 GiB of cache and the
    parent the candidate's outputs it had compared, and a candidate then ran out of memory on an
    80 GiB H100."""
    if device.startswith("cuda") and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def save_without_checksums() -> None:
    """torch.save in this process skips each member's CRC-32, which nothing reads back (the
    engine's own init and state files, trusted): on the CPU a 1 GiB save took 2.5 s with it and
    0.7 s without. Inputs and outputs cross as runners.tensor_file files."""
    torch.serialization.set_crc32_options(False)


def compare_call(
    result: Comparison,
    expected: list[Any],
    actual: Any,
    rules: list[dict[str, Any]],
    inputs: Sequence[Any] | None = None,
) -> None:
    """Fold one call's outputs into `result`. `rules` holds per output its tolerance (atol and
    rtol) or, for an index output, {"ties": {"values", "input", "dim"}} by position
    (runners.problem.Problem.tolerance_for); an index output needs the call's `inputs`."""
    if not isinstance(actual, list) or len(actual) != len(expected):
        count = len(actual) if isinstance(actual, list) else "?"
        result.fail(f"expected {len(expected)} output(s), got {count}")
        return
    for position, (want, got, rule) in enumerate(zip(expected, actual, rules, strict=True)):
        if "ties" in rule:
            _compare_ties(result, position, expected, got, rules, inputs)
            continue
        problem = _mismatch_in_kind(want, got)
        if problem:
            result.fail(f"output {position}: {problem}")
            continue
        _compare_values(result, f"output {position}", want, got, rule)


def _mismatch_in_kind(want: torch.Tensor, got: Any) -> str | None:
    if type(got) is not torch.Tensor:
        return f"is {type(got).__name__}, not a plain torch.Tensor"
    if got.layout != torch.strided or got.is_nested or got.is_quantized:
        return "is not a dense tensor"  # sparse or nested: reshape and slicing would raise
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    if got.device.type != want.device.type:
        return f"on {got.device.type}, expected {want.device.type}"
    return None


def _compare_ties(
    result: Comparison,
    position: int,
    expected: list[Any],
    got: Any,
    rules: list[dict[str, Any]],
    inputs: Sequence[Any] | None,
) -> None:
    """An index output up to ties: an integer tensor like the reference's, whose indices select
    from the input the expected values of the values output (exactly where they are copies,
    `_selection_rule`). Which of several equal values was picked does not count."""
    if type(got) is torch.Tensor and (got.is_floating_point() or got.is_complex()):
        result.fail(f"output {position}: indices must be an integer tensor, got {got.dtype}")
        return
    problem = _mismatch_in_kind(expected[position], got)
    if problem:
        result.fail(f"output {position}: {problem}")
        return
    if inputs is None:
        raise ValueError(f"output {position} is compared up to ties: its inputs are needed")
    ties = rules[position]["ties"]
    problem, picked = _select(got, inputs[ties["input"]], ties["dim"])
    if problem:
        result.fail(f"output {position}: {problem}")
        return
    values = expected[ties["values"]]
    if picked.shape != values.shape:
        raise ValueError(
            f"output {position} selects {tuple(picked.shape)} values, output {ties['values']} "
            f"holds {tuple(values.shape)}: the problem's ties rule does not fit its reference"
        )
    label = f"output {position}: the input's values at these indices"
    _compare_values(
        result,
        label,
        values,
        picked.to(values.device),
        _selection_rule(picked, values, rules[ties["values"]]),
    )


def _selection_rule(picked: torch.Tensor, values: torch.Tensor, rule: dict[str, Any]) -> dict:
    """Selected values of the values output's own dtype are copies of the input: held exact, so
    that an index of a near tie (a value within the tolerance, not equal) does not pass for a
    tie. Values of another dtype (a cast on the way out) keep the output's tolerance."""
    return {"atol": 0.0, "rtol": 0.0} if picked.dtype == values.dtype else rule


def _select(
    got: torch.Tensor, source: torch.Tensor, dim: int
) -> tuple[str | None, torch.Tensor | None]:
    """(why not, None) when an index is out of range along `dim` or appears twice there, else
    (None, the source's values at the indices). An index output one dimension short of the
    source has `dim` reduced away (argmax). Sizes appear only in parentheses, which held-out
    errors drop."""
    size = source.shape[dim]
    index = got.to(source.device, torch.int64)
    outside = int(((index < 0) | (index >= size)).sum())
    if outside:
        return f"{outside} index(es) out of range (0 to {size - 1}) along dim {dim}", None
    reduced = index.dim() == source.dim() - 1
    if reduced:
        return None, source.gather(dim, index.unsqueeze(dim)).squeeze(dim)
    if index.shape[dim] > 1 and bool((index.sort(dim=dim).values.diff(dim=dim) == 0).any()):
        return f"an index appears twice along dim {dim}", None
    return None, source.gather(dim, index)


# Elements compared at once: each temporary is a few tens of MiB rather than the size of the
# whole output (a 1 GiB output compared whole allocated about fifteen 1-2 GiB temporaries,
# seconds on every re-check of timed calls).
CHUNK = 1 << 22


def _compare_values(
    result: Comparison, label: str, want: torch.Tensor, got: torch.Tensor, tolerance: dict
) -> None:
    wide = _wide(want.dtype)
    want_flat, got_flat = want.reshape(-1), got.reshape(-1)
    tally = _Tally(tolerance["atol"], tolerance["rtol"])
    for start in range(0, want_flat.numel(), CHUNK):
        stop = start + CHUNK
        tally.add(start, want_flat[start:stop].to(wide), got_flat[start:stop].to(wide))
    if tally.nonfinite:
        result.fail(f"{label}: NaN or Inf where the reference is finite")
    if got.numel() and not tally.got_nonzero and tally.want_nonzero:
        result.fail(f"{label}: all zeros where the reference is not")
    result.max_abs_err = max(result.max_abs_err or 0.0, tally.max_abs)
    result.max_rel_err = max(result.max_rel_err or 0.0, tally.max_rel)
    if tally.mismatches:
        result.mismatches += tally.mismatches
        if result.worst_index is None:
            result.worst_index = [int(i) for i in _unravel(tally.worst, tuple(want.shape))]
        result.fail(f"{label}: {tally.mismatches} element(s) outside atol+rtol")


def _wide(dtype: torch.dtype) -> torch.dtype:
    """What a chunk is compared in: float32 (float64 for float64), complex64 for complex
    outputs (complex128 for complex128), so a complex element's error is its distance in the
    plane, held to atol + rtol * |want| as torch.allclose holds it."""
    if dtype.is_complex:
        return torch.complex128 if dtype == torch.complex128 else torch.complex64
    return torch.float64 if dtype == torch.float64 else torch.float32


@dataclass
class _Tally:
    """One output's comparison, folded in chunk by chunk. An element matches when
    |got - want| <= atol + rtol * |want|; a non-finite reference value matches only itself
    (NaN matching NaN); the worst element is the first with the largest excess over that."""

    atol: float
    rtol: float
    nonfinite: bool = False  # NaN or Inf in the output where the reference is finite
    got_nonzero: bool = False
    want_nonzero: bool = False
    mismatches: int = 0
    max_abs: float = 0.0  # over the elements whose difference is finite
    max_rel: float = 0.0  # over those whose reference is finite and not zero
    worst: int = 0
    worst_excess: float = -math.inf

    def add(self, offset: int, want: torch.Tensor, got: torch.Tensor) -> None:
        finite = torch.isfinite(want)
        self.nonfinite = self.nonfinite or bool((finite & ~torch.isfinite(got)).any())
        self.got_nonzero = self.got_nonzero or bool(got.any())
        self.want_nonzero = self.want_nonzero or bool(want.any())
        diff = got - want
        diff = diff.abs() if diff.is_complex() else diff.abs_()  # |d|: the distance in the plane
        if not bool(finite.all()):
            diff.masked_fill_(~finite & ((got == want) | (torch.isnan(got) & torch.isnan(want))), 0)
        diff.nan_to_num_(nan=math.inf)
        magnitude = want.abs()
        allowed = magnitude.nan_to_num(posinf=0.0).mul_(self.rtol).add_(self.atol)
        over = int((diff > allowed).sum())
        measurable = torch.isfinite(diff)
        self.max_abs = max(self.max_abs, float(torch.where(measurable, diff, 0.0).max()))
        nonzero = finite & measurable & (want != 0)
        relative = torch.where(nonzero, diff / magnitude, 0.0)
        self.max_rel = max(self.max_rel, float(relative.max()))
        if over:
            self.mismatches += over
            excess = diff.sub_(allowed)
            index = int(torch.argmax(excess))
            if float(excess[index]) > self.worst_excess:  # an earlier chunk keeps a tie
                self.worst, self.worst_excess = offset + index, float(excess[index])


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return list(reversed(index))
