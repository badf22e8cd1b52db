"""Smoke shapes the reference can run, for `python -m runners import-kernelbench`.

The converter shrinks a file's sizes without knowing its model: an image network that pools five
times cannot take a 28x28 image, and one built for 224x224 images asserts on anything else. So the
import runs each reference at its smoke shape (CPU, eval mode, no grad) and, where that fails,
doubles the shrunk sizes toward the file's own until the reference runs. Where it fails with every
size at the file's own value too, the problem gets no smoke shape (it grades on CUDA only) and the
import report gives the error. This module imports torch; `runners.kernelbench` never runs files.
"""

from __future__ import annotations

import types

import torch

from runners.kernelbench import is_batch

Shape = dict[str, int]


def fit(reference: str, smoke: Shape, visible: Shape) -> tuple[Shape | None, str | None]:
    """The smallest of smoke, smoke grown, ... that the reference runs at, and a note for the
    report where it is not `smoke` itself (None, and why, where none runs)."""
    tried, first_error = smoke, None
    while True:
        error = reference_error(reference, tried)
        if error is None:
            note = None if tried == smoke else f"{_text(tried)}; at {_text(smoke)}: {first_error}"
            return tried, note
        first_error = first_error or error
        grown = _grown(tried, visible)
        if grown == tried:
            return None, f"the reference fails at {_text(tried)}: {error}"
        tried = grown


def reference_error(reference: str, shape: Shape) -> str | None:
    """The first line of the error the reference raises at `shape`, or None where it runs."""
    module = types.ModuleType("kernelbench_reference")
    try:
        exec(compile(reference, "reference.py", "exec"), module.__dict__)  # noqa: S102
        for name, value in shape.items():
            setattr(module, name, value)
        torch.manual_seed(0)
        with torch.no_grad():
            module.Model(*module.get_init_inputs()).eval()(*module.get_inputs())
    except Exception as exc:  # any failure of the file's code is the answer
        message = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
        return message[:200]
    return None


def _grown(shape: Shape, visible: Shape) -> Shape:
    """Every size below the file's own doubled (at most to it); the batch stays small."""
    return {
        name: value if is_batch(name) or not value else min(2 * value, visible[name])
        for name, value in shape.items()
    }


def _text(shape: Shape) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())
