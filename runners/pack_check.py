"""Compare solution.py with reference.py on the shapes listed in shapes.json.

    python check.py [--solution PATH] [--device cuda|cpu] [--shapes visible|smoke]

On CPU the Triton interpreter runs the kernels (TRITON_INTERPRET=1) and the tiny smoke shapes are
used. Prints one line per shape and seed, then PASS or FAIL; exits 1 on FAIL. This is a local aid:
official grading adds shapes you are not shown, more input distributions, timing and integrity
checks. Needs only torch and the standard library.
"""

import argparse
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None) -> int:
    args = parse_args(argv)
    config = json.loads((HERE / "shapes.json").read_text())
    device = args.device or default_device()
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import torch

    reference = load_module("reference", HERE / "reference.py")
    solution = load_module("solution", Path(args.solution).resolve())
    failures = 0
    for index, shape in enumerate(config[args.shapes or default_set(device)]):
        for seed in config["seeds"]:
            problem = check_case(torch, reference, solution, shape, seed, device, config)
            label = " ".join(f"{name}={value}" for name, value in shape.items())
            print(f"shape {index} ({label}) seed {seed}: {problem or 'ok'}", flush=True)
            failures += problem is not None
    print("PASS" if not failures else f"FAIL: {failures} case(s) failed")
    return 1 if failures else 0


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Check solution.py against reference.py.")
    parser.add_argument("--solution", default=str(HERE / "solution.py"))
    parser.add_argument("--device", choices=["cuda", "cpu"])
    parser.add_argument("--shapes", choices=["visible", "smoke"])
    return parser.parse_args(argv)


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def default_set(device: str) -> str:
    return "visible" if device == "cuda" else "smoke"


def load_module(name: str, path: Path):
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_case(torch, reference, solution, shape, seed, device, config):
    """None when the solution matches the reference on this shape and seed, else the reason."""
    for name, value in shape.items():
        setattr(reference, name, value)
    torch.manual_seed(seed)
    init = reference.get_init_inputs()
    model = reference.Model(*init).to(device)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in reference.get_inputs()]
    with torch.no_grad():
        expected = model(*[clone(torch, x) for x in inputs])
        try:
            candidate = solution.ModelNew(*init).to(device)
            candidate.load_state_dict(model.state_dict(), strict=True)
            actual = candidate(*[clone(torch, x) for x in inputs])
            if device == "cuda":
                torch.cuda.synchronize()
        except Exception:
            return "error: " + traceback.format_exc(limit=-1).strip().splitlines()[-1]
    return compare(torch, named_outputs(expected), named_outputs(actual), config["outputs"])


def clone(torch, value):
    return value.clone() if isinstance(value, torch.Tensor) else value


def named_outputs(value) -> dict:
    if isinstance(value, tuple | list):
        return {f"out{i}": item for i, item in enumerate(value)}
    return {"out": value}


def compare(torch, expected: dict, actual: dict, tolerances: dict):
    if expected.keys() != actual.keys():
        return f"expected outputs {sorted(expected)}, got {sorted(actual)}"
    for name, want in expected.items():
        problem = compare_tensor(torch, want, actual[name], **tolerances[name])
        if problem:
            return f"{name}: {problem}"
    return None


def compare_tensor(torch, want, got, atol: float, rtol: float):
    if type(got) is not torch.Tensor:
        return f"expected a torch.Tensor, got {type(got).__name__}"
    for attribute in ("shape", "dtype", "device"):
        if getattr(got, attribute) != getattr(want, attribute):
            return f"{attribute} {getattr(got, attribute)} != {getattr(want, attribute)}"
    want, got = want.double(), got.double()
    if not torch.isfinite(got).all() and torch.isfinite(want).all():
        return "NaN or Inf in the output"
    if not got.any() and want.any():
        return "the output is all zeros"
    error = (got - want).abs()
    bad = error > atol + rtol * want.abs()
    if bad.any():
        return f"{int(bad.sum())} of {bad.numel()} elements off; max abs error {error.max():.3g}"
    return None


if __name__ == "__main__":
    sys.exit(main())
