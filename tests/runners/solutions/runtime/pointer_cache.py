"""Cheat: outputs cached by input address (hack 9). The first call at an address computes; later
calls at the same address return what was computed there, whatever the memory holds now."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))
        self.seen: dict[tuple[int, tuple[int, ...]], torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape))
        if key not in self.seen:
            decay = torch.exp(-2.0 * x.abs())
            self.seen[key] = torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
        return self.seen[key].clone()
