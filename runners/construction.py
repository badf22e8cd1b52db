"""Building a solution's model as KernelBench does, on the CPU, without the CPU's slow draws.

The engine builds `ModelNew(*get_init_inputs())` on the CPU and then loads the reference's
state_dict strictly (docs/evaluation.md, "build"): every value `torch.nn.init` draws while the
model is built is overwritten. On the CPU those draws run on one thread (`Tensor.normal_`, 30 to
200 M elements a second), so the MoE problem's headline shape, 1.6 G parameters, took 50 s to
build, once per shape in each candidate process: 300 of a 490 s grade (`--progress detail`,
docs/peer_runs.md). Inside `device_draws`, a large CPU tensor's random initialization is drawn
on the GPU and copied into it: the same distribution, the same CPU tensor in the same module,
in about a second. Everything else the constructor does runs as it would.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

# Below this many elements a CPU draw is quicker than the round trip to the device.
MIN_ELEMENTS = 1 << 20


def _initializers() -> frozenset:
    """torch.nn.init's in-place initializers (normal_, kaiming_uniform_, trunc_normal_, ...):
    each takes the tensor first, and a mode sees the call before its inner draws."""
    init = torch.nn.init
    return frozenset(
        getattr(init, name)
        for name in dir(init)
        if name.endswith("_") and not name.startswith("_") and callable(getattr(init, name))
    )


_DRAWS = frozenset({torch._C.TensorBase.normal_, torch._C.TensorBase.uniform_}) | _initializers()


class _DeviceDraws(TorchFunctionMode):
    def __init__(self, device: str):
        super().__init__()
        self.device = device
        self.moved = 0  # draws made on the device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        target = self._target(func, args, kwargs)
        if target is None:
            return func(*args, **kwargs)
        drawn = torch.empty(target.shape, dtype=target.dtype, device=self.device)
        if args:
            args = (drawn, *args[1:])
        else:  # torch.nn.init hands its tensor over by keyword
            kwargs = {**kwargs, "tensor": drawn}
        with torch.no_grad():
            func(*args, **kwargs)  # the mode is off inside its own handler
            target.copy_(drawn)
        self.moved += 1
        return target

    def _target(self, func, args: tuple, kwargs: dict[str, Any]) -> torch.Tensor | None:
        """The CPU tensor a large random draw fills, or None for any other call."""
        if func not in _DRAWS or kwargs.get("generator") is not None:
            return None  # a CPU generator the caller chose keeps its draw
        target = args[0] if args else kwargs.get("tensor")
        if type(target) not in (torch.Tensor, torch.nn.Parameter):
            return None
        if target.device.type != "cpu" or not target.is_floating_point():
            return None
        return target if target.numel() >= MIN_ELEMENTS else None


def build(model_class: Any, init: list[Any], device: str) -> torch.nn.Module:
    """`model_class(*init)` on the CPU, with its large random initializations drawn on `device`
    where that is a GPU."""
    if not device.startswith("cuda"):
        return model_class(*init)
    with _DeviceDraws(device):
        return model_class(*init)
