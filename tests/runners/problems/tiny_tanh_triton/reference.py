"""tanh of an fp32 matrix, scaled per column by a learned weight (tiny_tanh's reference, with a
library line so that the engine's tests see every baseline kind)."""

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


class Library(Model):
    """The library line: the multiply done in place on tanh's result, one temporary fewer."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x).mul_(self.weight)


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return [cols]
