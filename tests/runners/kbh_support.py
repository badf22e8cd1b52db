"""A hand-written checkout in KernelBench-Hard's layout, for the tests of the problem import
(tests/runners) and of the run import (tests/submissions): the grader files under src/eval/ are
ours, with their interface, and so is every problem."""

import textwrap
from pathlib import Path

CORRECTNESS = """
import torch

DEFAULTS = {torch.float32: 1e-4, torch.bfloat16: 1e-2, torch.int64: 0.0}


def tolerance_for_dtype(dtype, override=None):
    for key in (str(dtype), str(dtype).split(".")[-1]):
        if override and key in override:
            value = override[key]
            if isinstance(value, dict):
                return {"atol": value["atol"], "rtol": value["rtol"]}
            return {"atol": float(value), "rtol": float(value)}
    value = DEFAULTS.get(dtype, 1e-4)
    return {"atol": value, "rtol": value}
"""

NUMERIC_STRESS = """
from dataclasses import dataclass, field


@dataclass(frozen=True)
class NumericStressCase:
    name: str
    input_scales: dict = field(default_factory=dict)
    state_scales: dict = field(default_factory=dict)
    tolerance: dict | None = None


NOMINAL_CASE = NumericStressCase("nominal")
CASES = {
    "01_scaled_add": (
        NumericStressCase("large_x", input_scales={0: 64.0},
                          tolerance={"bfloat16": {"atol": 1.0, "rtol": 0.05}}),
        NumericStressCase("small_w", state_scales={"weight": 0.5}),
    ),
}


def numeric_stress_cases(name):
    return (NOMINAL_CASE, *CASES.get(name, ()))


def tolerance_for_case(base, case):
    return {**(base or {}), **case.tolerance} if case.tolerance else base
"""

RELU = {
    "problem.yaml": """
        name: 04_relu
        display_name: "ReLU"
        regime: memory
        flops_formula: "batch_size * dim"
        bytes_formula: "batch_size * dim * 8"
        peak_tflops_key: fp4
        forbidden: []
        """,
    "reference.py": """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def forward(self, x):
                return torch.relu(x)


        batch_size = 64
        dim = 256


        def get_inputs():
            return [torch.randn(batch_size, dim)]


        def get_init_inputs():
            return []
        """,
    "shapes.py": 'SHAPES = [{"batch_size": 64, "dim": 256}, {"batch_size": 128, "dim": 512}]\n',
    "PROMPT.txt": "Write a ReLU.\n",
}


def write_files(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())


def write_checkout(root: Path, *, gpu: str = "h100", property_stress: str = "CASES = {}") -> Path:
    """The checkout's grader files under `root` (`property_stress`: property_stress.py's text);
    returns its problems folder for `gpu`."""
    hard = root / "benchmarks" / "hard"
    write_files(
        hard / "src" / "eval", {"correctness.py": CORRECTNESS, "numeric_stress.py": NUMERIC_STRESS}
    )
    (hard / "src" / "eval" / "property_stress.py").write_text(property_stress + "\n")
    problems = hard / f"problems-{gpu}"
    problems.mkdir(parents=True)
    return problems
