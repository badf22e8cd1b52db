"""Right output, but it zeroes its input afterwards (would starve a shared reference)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        decay = torch.exp(-2.0 * x.abs())
        out = torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
        x.zero_()
        return out
