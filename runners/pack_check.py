"""Compare solution.py with reference.py on the shapes listed in shapes.json.

    python check.py [--solution PATH] [--device cuda|cpu] [--shapes visible|smoke]

On CPU the Triton interpreter runs the kernels (TRITON_INTERPRET=1) and the tiny smoke shapes are
used. It checks as official grading checks the shapes it shows you: each seed draws the input
distribution shapes.json gives it (a built-in one, or a case of the problem: some inputs scaled,
or drawn by a function of reference.py), the reference's parameters and the buffers named in
perturb_buffers are moved off their initial values before your ModelNew loads them, and outputs
are compared by check_compare.py, the grader's own comparison, with that distribution's
tolerances (index outputs up to ties). Prints one line per shape and seed, then PASS or FAIL;
exits 1 on FAIL. This is a local aid: official grading adds shapes and seeds you are not shown,
timing and integrity checks. Needs only torch and the standard library.
"""

import argparse
import contextlib
import functools
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The built-in input distributions, applied to every floating input as the grader's reference
# process applies them (runners.oracle.apply_distribution; a test holds the two equal).
BUILT_IN_DISTRIBUTIONS = ("normal", "large", "offset", "uniform", "small")


# Agents sharing a GPU check one at a time (`arena run --gpu`, docs/launcher.md): this script holds
# the lock file ARENA_GPU_LOCK names, when set, while it imports and runs the solution.
GPU_LOCK_ENV = "ARENA_GPU_LOCK"


def main(argv=None) -> int:
    with gpu_lock(os.environ.get(GPU_LOCK_ENV)):
        return check(parse_args(argv))


@contextlib.contextmanager
def gpu_lock(path):
    if not path:
        yield
        return
    import fcntl

    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for the GPU lock {path}: another agent's check holds it", flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def check(args) -> int:
    config = json.loads((HERE / "shapes.json").read_text())
    device = args.device or default_device()
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    reference = load_module("reference", HERE / "reference.py")
    solution = load_module("solution", Path(args.solution).resolve())
    failures = 0
    for index, shape in enumerate(config[args.shapes or default_set(device)]):
        label = " ".join(f"{name}={value}" for name, value in shape.items())
        for seed, distribution, problem in check_shape(reference, solution, shape, device, config):
            print(f"shape {index} ({label}) seed {seed} {distribution}: {problem or 'ok'}")
            sys.stdout.flush()
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
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@functools.cache
def grader_comparison():
    """runners/compare.py of the grading engine, which the pack holds as check_compare.py."""
    return load_module("check_compare", HERE / "check_compare.py")


def check_shape(reference, solution, shape, device, config) -> list[tuple[int, str, str | None]]:
    """(seed, distribution, None or what is wrong) for each seed of the shape. Both models are
    built once per shape, as the grader builds them."""
    for name, value in shape.items():
        setattr(reference, name, value)
    draws = list(zip(config["seeds"], config["distributions"], strict=True))
    model, init = reference_model(reference, config, device)
    try:
        candidate = solution.ModelNew(*init)
        candidate.load_state_dict(model.state_dict(), strict=True)
        candidate = candidate.to(device).eval()
    except Exception:
        why = failure()
        return [(seed, distribution, why) for seed, distribution in draws]
    results = []
    for seed, distribution in draws:
        inputs = draw_inputs(reference, seed, distribution, device, config["cases"])
        rules = config["tolerances"][distribution]
        results.append((seed, distribution, check_inputs(model, candidate, inputs, rules, device)))
    return results


def check_inputs(model, candidate, inputs, rules, device) -> str | None:
    """None when the solution's outputs match the reference's on this input set, else why not."""
    import torch

    with torch.no_grad():
        expected = output_list(model(*fresh(inputs)))
        try:
            actual = output_list(candidate(*fresh(inputs)))
            if device == "cuda":
                torch.cuda.synchronize()
        except Exception:
            return failure()
    compare = grader_comparison()
    result = compare.Comparison()
    compare.compare_call(result, expected, actual, rules, inputs)
    if result.correct:
        return None
    if result.mismatches:  # worst_index is set with them
        worst = f"max abs error {result.max_abs_err:.3g}, worst at {result.worst_index}"
        return f"{result.error} ({worst})"
    return result.error


def reference_model(reference, config, device):
    """The reference model and its init inputs as the grader's reference process builds them
    (runners.oracle.Oracle._reference_model): under the shape's first seed, on the device, the
    parameters and the buffers shapes.json names moved off their initial values."""
    import torch

    torch.manual_seed(config["seeds"][0])
    with torch.device(device):
        init = list(reference.get_init_inputs())
        model = reference.Model(*init)
        perturb(model, config["perturb_buffers"])
    return model.to(device).eval(), [a.cpu() if isinstance(a, torch.Tensor) else a for a in init]


def perturb(model, buffer_names) -> None:
    """runners.oracle.perturb_parameters: parameters, then the named floating buffers, moved by
    +-25 % noise of their mean magnitude; fp8 ones widened, moved and rounded back."""
    import torch

    buffers = dict(model.named_buffers())
    for name in buffer_names:
        if name not in buffers:
            raise SystemExit(f"shapes.json: perturb_buffers names {name!r}, a buffer Model lacks")
    with torch.no_grad():
        for tensor in [*model.parameters(), *(buffers[name] for name in buffer_names)]:
            if not tensor.is_floating_point():
                continue
            noise = torch.randn_like(tensor, dtype=torch.float32)
            step = noise * 0.25 * tensor.float().abs().mean().clamp_min(0.1)
            if tensor.element_size() == 1:
                tensor.copy_((tensor.float() + step).to(tensor.dtype))
            else:
                tensor.add_(step.to(tensor.dtype))


def draw_inputs(reference, seed, distribution, device, cases) -> list:
    """One input set as the grader draws it (runners.oracle.grade_inputs): get_inputs(), or the
    case's generator, under the seed on the device; then the built-in distribution on every
    floating input, or the case's factors on the inputs it names."""
    import torch

    case = cases.get(distribution, {})
    if distribution not in BUILT_IN_DISTRIBUTIONS and not case:
        raise SystemExit(
            f"shapes.json: distribution {distribution!r} is neither built in nor a case"
        )
    torch.manual_seed(seed)
    with torch.device(device):
        generator = case.get("generator")
        args = list(getattr(reference, generator)() if generator else reference.get_inputs())
        if distribution in BUILT_IN_DISTRIBUTIONS:
            args = [distribute(a, distribution) if is_float(a) else a for a in args]
        for position, factor in case.get("scale", {}).items():
            value = args[int(position)]
            args[int(position)] = (value.float() * factor).to(value.dtype)
    return [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]


def distribute(tensor, name: str):
    import torch

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


def is_float(value) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and value.is_floating_point()


def fresh(args) -> list:
    """Each side its own copy of the inputs, as in grading."""
    import torch

    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def output_list(out) -> list:
    items = list(out) if isinstance(out, tuple | list) else [out]
    return [item.detach() if hasattr(item, "detach") else item for item in items]


def failure() -> str:
    return "error: " + traceback.format_exc(limit=-1).strip().splitlines()[-1]


if __name__ == "__main__":
    sys.exit(main())
