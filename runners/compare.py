"""Correctness comparison, run in the trusted parent on outputs loaded without candidate code."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class Comparison:
    correct: bool = True
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    mismatches: int = 0
    worst_index: list[int] | None = None
    errors: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.correct = False
        self.errors.append(message)

    @property
    def error(self) -> str | None:
        return "; ".join(self.errors[:3]) if self.errors else None


def compare_call(
    result: Comparison, expected: list[Any], actual: Any, tolerances: list[dict[str, float]]
) -> None:
    """Fold one call's outputs into `result`."""
    if not isinstance(actual, list) or len(actual) != len(expected):
        count = len(actual) if isinstance(actual, list) else "?"
        result.fail(f"expected {len(expected)} output(s), got {count}")
        return
    for position, (want, got, tolerance) in enumerate(
        zip(expected, actual, tolerances, strict=True)
    ):
        problem = _mismatch_in_kind(want, got)
        if problem:
            result.fail(f"output {position}: {problem}")
            continue
        _compare_values(result, position, want, got, tolerance)


def _mismatch_in_kind(want: torch.Tensor, got: Any) -> str | None:
    if type(got) is not torch.Tensor:
        return f"is {type(got).__name__}, not a plain torch.Tensor"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    if got.device.type != want.device.type:
        return f"on {got.device.type}, expected {want.device.type}"
    return None


def _compare_values(
    result: Comparison, position: int, want: torch.Tensor, got: torch.Tensor, tolerance: dict
) -> None:
    wide = torch.float64 if want.dtype == torch.float64 else torch.float32
    want_w, got_w = want.to(wide), got.to(wide)
    finite = torch.isfinite(want_w)
    if bool((~torch.isfinite(got_w) & finite).any()):
        result.fail(f"output {position}: NaN or Inf where the reference is finite")
    if got_w.numel() and not bool(got_w.any()) and bool(want_w.any()):
        result.fail(f"output {position}: all zeros where the reference is not")
    same_nonfinite = ~finite & ((got_w == want_w) | (torch.isnan(got_w) & torch.isnan(want_w)))
    diff = torch.where(same_nonfinite, 0.0, (got_w - want_w).abs()).nan_to_num(nan=math.inf)
    allowed = tolerance["atol"] + tolerance["rtol"] * want_w.abs().nan_to_num(posinf=0.0)
    over = diff > allowed
    mismatches = int(over.sum())
    _record_errors(result, diff, want_w, finite)
    if mismatches:
        result.mismatches += mismatches
        worst = int(torch.argmax(diff - allowed))
        if result.worst_index is None:
            result.worst_index = [int(i) for i in _unravel(worst, tuple(want.shape))]
        result.fail(f"output {position}: {mismatches} element(s) outside atol+rtol")


def _record_errors(result: Comparison, diff: torch.Tensor, want: torch.Tensor, finite) -> None:
    measurable = torch.isfinite(diff)
    if not bool(measurable.any()):
        return
    result.max_abs_err = max(result.max_abs_err, float(diff[measurable].max()))
    nonzero = finite & measurable & (want != 0)
    if bool(nonzero.any()):
        relative = (diff[nonzero] / want[nonzero].abs()).max()
        result.max_rel_err = max(result.max_rel_err, float(relative))


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return list(reversed(index))
