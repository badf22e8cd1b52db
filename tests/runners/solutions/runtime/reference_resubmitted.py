"""The reference itself, submitted as the solution."""

import torch
import torch.nn as nn

rows = 4
cols = 8


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * self.weight


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return [cols]
