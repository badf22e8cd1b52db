"""Attention forward (no mask) over bf16 q, k, v of shape (batch, heads, seq, head_dim).

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

import torch
import torch.nn as nn

batch = 4
heads = 16
seq = 1024
head_dim = 64


class Model(nn.Module):
    """Exact: scores, softmax and the weighted sum in fp32, one rounding to bf16."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = q.float() @ k.float().transpose(-1, -2) * q.shape[-1] ** -0.5
        weights = torch.softmax(scores, dim=-1)
        return (weights @ v.float()).to(torch.bfloat16)


def get_inputs():
    shape = (batch, heads, seq, head_dim)
    return [torch.randn(shape, dtype=torch.bfloat16) for _ in range(3)]


def get_init_inputs():
    return []
