"""Running a peer reference during the import: on the CPU at its smoke shapes (which also tells
the outputs' count and dtypes and which output holds indices), and on the meta device at the
held-out shapes (no memory, no arithmetic: whether the reference accepts them, and their size).
"""

from __future__ import annotations

import inspect
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from runners.kernelbench_hard.peer import Unconvertible
from runners.oracle import as_output_list

# A held-out shape's inputs and weights stay under this, so that an H100 holds the reference,
# the candidate and the timing loop's input copies at once.
MAX_SHAPE_BYTES = 4 * 2**30
SMOKE_MAX_S = 10.0  # a smoke shape the CPU needs longer for is no smoke shape


@dataclass
class Run:
    """The reference run once on the CPU at a smoke shape."""

    model: torch.nn.Module
    inputs: list[Any]
    outputs: list[Any]
    seconds: float


def reference_module(text: str) -> types.ModuleType:
    module = types.ModuleType("kernelbench_hard_reference")
    try:
        exec(compile(text, "reference.py", "exec"), module.__dict__)  # noqa: S102 (their oracle)
    except Exception as exc:  # any failure of their file is the reason it cannot be imported
        raise Unconvertible(f"reference.py fails to import here: {error_text(exc)}") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(getattr(module, name, None)):
            raise Unconvertible(f"reference.py defines no {name}")
    return module


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:200]


def shape_text(shape: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())


def _set_shape(module: types.ModuleType, shape: dict[str, int]) -> None:
    for name, value in shape.items():
        setattr(module, name, value)


def run_reference(module: types.ModuleType, shape: dict[str, int]) -> Run:
    """The reference at `shape` on the CPU, built as the engine builds it (eval, no grad)."""
    _set_shape(module, shape)
    torch.manual_seed(0)
    started = time.perf_counter()
    with torch.no_grad():
        model = module.Model(*module.get_init_inputs()).eval()
        inputs = list(module.get_inputs())
        outputs = as_output_list(model(*[_copy(a) for a in inputs]))
    return Run(model, inputs, outputs, time.perf_counter() - started)


def _copy(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def run_smoke(
    module: types.ModuleType, shapes: list[dict[str, int]], notes: list[str]
) -> tuple[list[dict[str, int]], Run]:
    """The smoke shapes the reference runs at on the CPU within SMOKE_MAX_S, and its first run."""
    kept, first, dropped = [], None, []
    for shape in shapes:
        try:
            run = run_reference(module, shape)
        except Exception as exc:  # the reference refusing the shape is the finding
            dropped.append(
                f"smoke shape {shape_text(shape)}: the reference fails: {error_text(exc)}"
            )
            continue
        if run.seconds > SMOKE_MAX_S:
            dropped.append(f"smoke shape {shape_text(shape)}: {run.seconds:.1f} s on the CPU")
            continue
        kept.append(shape)
        first = first or run
    if first is None:
        raise Unconvertible(f"the reference runs at none of its smoke shapes ({dropped[0]})")
    notes += [f"{line}; dropped" for line in dropped]
    return kept, first


def meta_problem(module: types.ModuleType, shape: dict[str, int]) -> str | None:
    """Why the reference refuses `shape`, built and run on the meta device; None where it
    accepts it. Forward code that reads values (`.item()`) cannot run there: such a shape counts
    as accepted once the model and the inputs are built."""
    _set_shape(module, shape)
    try:
        with torch.device("meta"), torch.no_grad():
            model = module.Model(*module.get_init_inputs())
            inputs = list(module.get_inputs())
            tensors = [*model.state_dict().values(), *inputs]
            nbytes = sum(t.nbytes for t in tensors if isinstance(t, torch.Tensor))
            if nbytes > MAX_SHAPE_BYTES:
                return f"inputs and weights take {nbytes / 2**30:.1f} GiB"
            model(*inputs)
    except Exception as exc:  # a refusal of the shape, unless it is the meta device's own
        if "meta" not in str(exc).lower():
            return f"the reference fails: {error_text(exc)}"
    return None


def index_outputs(inputs: list[Any], outputs: list[torch.Tensor]) -> dict[int, dict[str, Any]]:
    """Integer outputs that pick another output's values out of an input along its last dim
    (top-k's indices): position -> the `ties` rule (values output, input position, dim)."""
    names, found = output_names(len(outputs)), {}
    for position, indices in enumerate(outputs):
        if indices.is_floating_point() or indices.is_complex() or not indices.numel():
            continue
        for values_at, values in enumerate(outputs):
            for input_at, source in enumerate(inputs):
                if _selects(indices, values, source):
                    found[position] = {"values": names[values_at], "input": input_at, "dim": -1}
    return found


def output_names(count: int) -> list[str]:
    return ["out"] if count == 1 else [f"out{i}" for i in range(count)]


def _selects(indices: torch.Tensor, values: torch.Tensor, source: Any) -> bool:
    if not (isinstance(source, torch.Tensor) and values.is_floating_point()):
        return False
    if values.shape != indices.shape or source.dtype != values.dtype:
        return False
    if source.dim() != indices.dim() or source.shape[:-1] != indices.shape[:-1]:
        return False
    if int(indices.min()) < 0 or int(indices.max()) >= source.shape[-1]:
        return False
    return torch.equal(torch.gather(source, -1, indices.long()), values)


# -- structural cases --------------------------------------------------------------------------
def generator_name(case: str) -> str:
    return f"make_{case}_inputs"


def with_generator(reference: str, case: str, function: Callable) -> str:
    """reference.py with a structural case's function appended (its source: it uses torch
    alone) and `make_<case>_inputs()`, which applies it to get_inputs()'s draw."""
    private = f"_arena_{function.__name__}"
    source = inspect.getsource(function).replace(f"def {function.__name__}(", f"def {private}(", 1)
    return (
        reference.rstrip()
        + "\n\n\n# Added by `python -m runners import-kernelbench-hard`: a structural input case"
        + " (problem.yaml\n# `cases`), ours, in place of KernelBench-Hard's property-stress"
        + f" cases.\n{source}\n\ndef {generator_name(case)}():\n"
        + f"    return {private}(get_inputs())\n"
    )


def generator_problem(
    module: types.ModuleType, run: Run, shape: dict[str, int], case: str
) -> str | None:
    """Why the case's generator does not fit at the smoke shape: it fails, the reference fails
    on its inputs, or they differ from get_inputs()'s in shape or dtype (the timing loop refills
    one set of buffers with every input set); None where it fits."""
    _set_shape(module, shape)
    try:
        torch.manual_seed(0)
        made = list(getattr(module, generator_name(case))())
        if _kinds(made) != _kinds(run.inputs):
            return "its inputs differ from get_inputs()'s in shape or dtype"
        with torch.no_grad():
            run.model(*made)
    except Exception as exc:  # the case not fitting this reference is the finding
        return error_text(exc)
    return None


def _kinds(values: list[Any]) -> list[Any]:
    return [(tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor) else v for v in values]
