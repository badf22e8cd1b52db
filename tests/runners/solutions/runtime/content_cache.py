"""Cheat: outputs cached by a cheap fingerprint of the input's contents (hack 9).

Hashing every byte would cost as much as a memory-bound kernel, so the fingerprint reads a few
elements' signs: enough to tell a handful of distinct inputs apart and far cheaper than the
work on a compute-bound problem. Varied inputs keep their signs, so it returns stale outputs.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))
        self.seen: dict[tuple, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sample = x.flatten()[:: max(1, x.numel() // 16)][:16]
        key = (tuple(x.shape), tuple((sample > 0).tolist()))
        if key not in self.seen:
            decay = torch.exp(-2.0 * x.abs())
            self.seen[key] = torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
        return self.seen[key].clone()
