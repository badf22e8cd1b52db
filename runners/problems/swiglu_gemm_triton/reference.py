"""The gate of a SwiGLU MLP: silu(x @ w_gate) * (x @ w_up), all bf16.

x is (tokens, hidden); w_gate and w_up are (hidden, inter), scaled by hidden ** -0.5 so that the
products stay of order one. The engine sets the shape globals below before calling
get_inputs/get_init_inputs; the values here are defaults. get_inputs returns tensors on the
current default device.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

tokens = 4096
hidden = 4096
inter = 11008


class Model(nn.Module):
    """Exact: both products and the SwiGLU in fp32, one rounding to bf16."""

    def forward(self, x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
        wide = x.float()
        gate = wide @ w_gate.float()
        up = wide @ w_up.float()
        return (F.silu(gate) * up).to(torch.bfloat16)


def get_inputs():
    x = torch.randn(tokens, hidden, dtype=torch.bfloat16)
    scale = hidden**-0.5
    w_gate = (torch.randn(hidden, inter) * scale).to(torch.bfloat16)
    w_up = (torch.randn(hidden, inter) * scale).to(torch.bfloat16)
    return [x, w_gate, w_up]


def get_init_inputs():
    return []
