"""The reference's arithmetic in plain PyTorch, no Triton kernel: the triton-to-triton category
rejects it at the static gate."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.bias = nn.Parameter(torch.zeros(hidden, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        centred = h - h.mean(-1, keepdim=True)
        inv_std = torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + self.eps)
        return (centred * inv_std * self.weight.float() + self.bias.float()).to(torch.bfloat16)
