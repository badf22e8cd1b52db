"""Entry point of the reference process: inputs, expected outputs and the baseline timings.

It runs the problem's trusted reference.py in a process of its own, never in the candidate's and
never in the parent. Expected outputs go to a directory the candidate cannot read.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

import torch

from runners import protocol, timing

_DISTRIBUTIONS = ("normal", "large", "offset", "uniform", "small")


def apply_distribution(args: list[Any], name: str) -> list[Any]:
    """Reshape the floating inputs' values; integer and non-tensor inputs stay as they are."""
    if name not in _DISTRIBUTIONS:
        raise ValueError(f"unknown input distribution {name!r}")
    return [_distribute(a, name) if _is_float(a) else a for a in args]


def _is_float(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _distribute(tensor: torch.Tensor, name: str) -> torch.Tensor:
    wide = tensor.float()
    if name == "large":
        wide = wide * 64.0
    elif name == "offset":
        wide = wide + 4.0
    elif name == "small":
        wide = wide * 1e-3
    elif name == "uniform":
        wide = torch.rand_like(wide) * 2.0 - 1.0
    return wide.to(tensor.dtype)


def perturb_parameters(model: torch.nn.Module) -> None:
    """Move parameters off their constant initial values (ones, zeros) so that they matter."""
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.is_floating_point():
                noise = torch.randn_like(parameter, dtype=torch.float32)
                scale = parameter.float().abs().mean().clamp_min(0.1)
                parameter.add_((noise * 0.25 * scale).to(parameter.dtype))


def as_output_list(out: Any) -> list[Any]:
    items = list(out) if isinstance(out, tuple | list) else [out]
    return [o.detach() if isinstance(o, torch.Tensor) else o for o in items]


class Oracle:
    def __init__(self):
        self.reference = None

    def prepare(self, request: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        self.reference = _import_reference(Path(request["problem_dir"]) / "reference.py")
        for shape in request["shapes"]:
            self._prepare_shape(shape, request)
        return {"seconds": time.perf_counter() - started}

    def _prepare_shape(self, shape: dict[str, Any], request: dict[str, Any]) -> None:
        device, in_dir, ref_dir = (
            request["device"],
            Path(request["in_dir"]),
            Path(request["ref_dir"]),
        )
        model, init = self._reference_model(shape, device)
        init = [a.cpu() if isinstance(a, torch.Tensor) else a for a in init]
        torch.save(init, in_dir / f"init_{shape['id']}.pt")
        torch.save(
            {k: v.cpu() for k, v in model.state_dict().items()}, in_dir / f"state_{shape['id']}.pt"
        )
        input_sets, expected = [], []
        for seed, distribution in zip(shape["seeds"], shape["dists"], strict=True):
            torch.manual_seed(seed)
            with torch.device(device):  # generate on the device: CPU randn of 1 GiB takes seconds
                args = apply_distribution(list(self.reference.get_inputs()), distribution)
            args = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
            with torch.no_grad():
                expected.append(as_output_list(model(*timing.fresh_copy(args))))
            input_sets.append(args)
        torch.save(input_sets, in_dir / f"inputs_{shape['id']}.pt")
        torch.save(expected, ref_dir / f"expected_{shape['id']}.pt")

    def _reference_model(self, shape: dict[str, Any], device: str):
        """The reference model at this shape's parameters, built from its first seed."""
        for name, value in shape["params"].items():
            setattr(self.reference, name, value)
        torch.manual_seed(shape["seeds"][0])
        with torch.device(device):
            init = list(self.reference.get_init_inputs())
            model = self.reference.Model(*init)
            perturb_parameters(model)
        return model.to(device).eval(), init

    def baseline(self, request: dict[str, Any]) -> dict[str, Any]:
        model, _ = self._reference_model(request["shape"], request["device"])
        if request.get("library"):
            if not hasattr(self.reference, "Library"):
                return {"event_ms": [], "seconds": 0.0}  # no library line for this problem
            model = self._library_model(model, request["shape"], request["device"])
        if request["compile"]:
            torch._dynamo.reset()  # a static graph per shape, not one that went dynamic
            model = torch.compile(model, dynamic=False)
        bases = torch.load(
            request["inputs"], map_location=request["device"], weights_only=True, mmap=True
        )
        settings = timing.Settings.from_dict(request["settings"])
        started = time.perf_counter()
        samples = timing.measure(
            lambda args: model(*args),
            bases,
            device=request["device"],
            settings=settings,
        )
        return {**samples.to_reply(), "seconds": time.perf_counter() - started}

    def _library_model(self, model: torch.nn.Module, shape: dict[str, Any], device: str):
        """reference.Library built like Model, holding the same (perturbed) parameters."""
        torch.manual_seed(shape["seeds"][0])
        with torch.device(device):
            library = self.reference.Library(*self.reference.get_init_inputs())
        library.load_state_dict(model.state_dict(), strict=True)
        return library.to(device).eval()


def _import_reference(path: Path):
    spec = importlib.util.spec_from_file_location("reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    reply_fd = protocol.reply_fd_from_argv(sys.argv)
    oracle = Oracle()
    protocol.serve({"prepare": oracle.prepare, "baseline": oracle.baseline}, reply_fd)
