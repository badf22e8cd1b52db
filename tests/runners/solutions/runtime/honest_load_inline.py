"""Honest tiny_tanh whose op is C++ built at import with load_inline (torch's JIT build: ninja
and the host compiler, as nvcc on a GPU worker): the control of the build cache
(runners.build_cache), which keeps the build for a later grade of the same files."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = """
#include <torch/extension.h>

torch::Tensor scaled_tanh(torch::Tensor x, torch::Tensor weight) {
    return torch::tanh(x) * weight;
}
"""

extension = load_inline(name="arena_scaled_tanh", cpp_sources=SOURCE, functions=["scaled_tanh"])


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return extension.scaled_tanh(x, self.weight)
