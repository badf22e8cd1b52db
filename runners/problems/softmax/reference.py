"""Softmax over the last dimension of an fp32 matrix.

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns CPU tensors; the engine moves them to the device.
"""

import torch
import torch.nn as nn

rows = 8192
cols = 1000


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return []
