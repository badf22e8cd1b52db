"""Hoards host memory in 256 MiB steps, bounded at 6 GiB so a missing limit stays survivable."""

import torch
import torch.nn as nn

HOARD = []
for _ in range(24):
    HOARD.append(bytearray(256 * 2**20))


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x
