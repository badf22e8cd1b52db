"""Honest tiny_tanh that writes every call's result into one output buffer it keeps (as serving
code does with static buffers): each call's outputs are right until the next call."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))
        self.register_buffer("out", torch.empty(0), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.out.shape != x.shape:
            self.out = torch.empty_like(x)
        decay = torch.exp(-2.0 * x.abs())
        torch.mul(torch.sign(x) * (1.0 - decay) / (1.0 + decay), self.weight, out=self.out)
        return self.out
