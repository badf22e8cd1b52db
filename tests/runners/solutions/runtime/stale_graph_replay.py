"""Cheat: a CUDA-graph-style replay on stale inputs (hacks 6 and 9), written for the CPU where a
real graph cannot run. Like a graph captured on a static input buffer, every call recomputes
from that buffer; fresh inputs are copied in only for a model's first calls (the correctness
gates make three per shape here, one per seed), so the calls of a timing loop return outputs of
an input long gone. The correctness gates pass; the re-check of the timed calls fails."""

import torch
import torch.nn as nn

REFRESHED_CALLS = 3


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))
        self.static_x: torch.Tensor | None = None
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.static_x is None or self.static_x.shape != x.shape:
            self.static_x = torch.empty_like(x)
        if self.calls <= REFRESHED_CALLS:
            self.static_x.copy_(x)
        return self.replay()

    def replay(self) -> torch.Tensor:
        decay = torch.exp(-2.0 * self.static_x.abs())
        return torch.sign(self.static_x) * (1.0 - decay) / (1.0 + decay) * self.weight
