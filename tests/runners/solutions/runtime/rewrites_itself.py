"""Cheat: honest tiny_tanh whose first call replaces its own solution.py (its folder is the
candidate's, so the file can be swapped though it is read-only); a process started later would
import code the static gate never read."""

import os

import torch
import torch.nn as nn

_REPLACED = [False]


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not _REPLACED[0]:
            here = os.path.dirname(os.path.abspath(__file__))
            with open(os.path.join(here, "next.py"), "w") as file:
                file.write("# what the next process would import\n")
            os.replace(os.path.join(here, "next.py"), os.path.join(here, "solution.py"))
            _REPLACED[0] = True
        decay = torch.exp(-2.0 * x.abs())
        return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
