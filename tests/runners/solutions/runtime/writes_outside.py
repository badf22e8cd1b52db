"""Tries to write outside its own folder at import: beside it (the engine's inputs, expected
outputs and harness), into its read-only problem copy, the repository and torch. Returns the
right answer only if every such write failed and its own folder took one (runners.sandbox)."""

import os
import sys
from pathlib import Path

import torch
import torch.nn as nn

OWN = Path(os.getcwd())
OUTSIDE = [
    OWN.parent / "in",
    OWN.parent / "ref",
    OWN.parent / "harness" / "runners",
    OWN / "problem",
    Path(sys.executable).parents[2] / "runners",
    Path(torch.__file__).parent,
]


def landed(folder: Path) -> bool:
    probe = folder / "arena_write_probe.txt"
    try:
        probe.write_text("written by a candidate")
    except OSError:
        return False
    probe.unlink()
    return True


CONFINED = landed(OWN) and not any(landed(folder) for folder in OUTSIDE)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not CONFINED:
            return torch.full_like(x, 7.0)
        decay = torch.exp(-2.0 * x.abs())
        return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
