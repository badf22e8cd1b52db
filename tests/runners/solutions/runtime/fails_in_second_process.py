"""Honest tiny_tanh whose import fails in any process after the first of its grading: the file
it leaves in its working folder stays there for the grading's later processes (the static gate
refuses the write, so it is graded with static=False)."""

import torch
import torch.nn as nn

try:
    open("imported_once", "x").close()
except FileExistsError:
    raise RuntimeError("this solution imports only once") from None


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        decay = torch.exp(-2.0 * x.abs())
        return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
