"""Sum over the last dimension of a bf16 matrix, accumulated and returned in fp32.

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

import torch
import torch.nn as nn

rows = 8192
cols = 8192


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.float().sum(-1)


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
