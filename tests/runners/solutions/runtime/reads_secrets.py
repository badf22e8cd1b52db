"""Looks for the grader's secrets; returns garbage if it finds any, the right answer if not."""

import os
import sys
from pathlib import Path

import torch
import torch.nn as nn

SECRET = "ARENA_TEST_SECRET"


def found_secret() -> bool:
    if SECRET in os.environ:
        return True
    for environ in Path("/proc").glob("*/environ"):
        try:
            if SECRET.encode() in environ.read_bytes():
                return True
        except OSError:
            pass
    repo = Path(sys.executable).parents[2]
    for hidden in (
        repo / "tests/runners/problems/tiny_tanh/hidden.yaml",
        repo / "runners/problems/softmax/hidden.yaml",
    ):
        try:
            hidden.read_text()
            return True
        except OSError:
            pass
    return False


LEAK = found_secret()


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if LEAK:
            return torch.full_like(x, 7.0)
        decay = torch.exp(-2.0 * x.abs())
        return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
