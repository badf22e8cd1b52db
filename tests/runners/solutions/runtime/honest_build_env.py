"""Honest tiny_tanh that sets build variables at import, as solutions do before load_inline
(the architecture list, parallel jobs, the toolkit, a PATH entry). They change only this
process's environment: flagged `build_environment`, graded."""

import os
import sys

import torch
import torch.nn as nn

os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0a"
os.environ.setdefault("MAX_JOBS", "2")
if "CUDA_HOME" not in os.environ:
    os.environ["CUDA_HOME"] = "/usr/local/cuda"
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        decay = torch.exp(-2.0 * x.abs())
        return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
