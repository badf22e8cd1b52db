"""LayerNorm forward over the last dimension of bf16 activations, with a bf16 weight and bias.

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

import torch
import torch.nn as nn

tokens = 16384
hidden = 4096


class Model(nn.Module):
    """Exact: statistics and normalisation in fp32, one rounding to bf16."""

    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.bias = nn.Parameter(torch.zeros(hidden, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        mean = h.mean(-1, keepdim=True)
        centred = h - mean
        inv_std = torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + self.eps)
        out = centred * inv_std * self.weight.float() + self.bias.float()
        return out.to(torch.bfloat16)


def get_inputs():
    return [torch.randn(tokens, hidden, dtype=torch.bfloat16)]


def get_init_inputs():
    return [hidden]
