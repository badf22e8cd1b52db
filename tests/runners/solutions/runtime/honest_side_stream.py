"""Honest tiny_tanh that overlaps part of its work on a side stream: forked from the current
stream before any work, joined back before returning. On the CPU it computes on one stream.
Flagged `side_stream`, graded: the forked work falls in the timed window."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))
        self.side: torch.cuda.Stream | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            return self.scaled_tanh(x, torch.exp(-2.0 * x.abs()))
        if self.side is None:
            self.side = torch.cuda.Stream()
        main = torch.cuda.current_stream()
        self.side.wait_stream(main)
        with torch.cuda.stream(self.side):
            decay = torch.exp(-2.0 * x.abs())
        main.wait_stream(self.side)
        decay.record_stream(main)
        return self.scaled_tanh(x, decay)

    def scaled_tanh(self, x: torch.Tensor, decay: torch.Tensor) -> torch.Tensor:
        return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
