"""Transpose of an fp32 matrix into a new contiguous (cols, rows) tensor.

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

import torch
import torch.nn as nn

rows = 8192
cols = 8192


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous()


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float32)]


def get_init_inputs():
    return []
