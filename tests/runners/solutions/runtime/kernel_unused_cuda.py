"""Cheat: a CUDA kernel built with load_inline but never run (hack 24, GPU only). The build
succeeds; forward catches a failing call (wrong argument count) and falls back to PyTorch."""

import functools

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>

__global__ void scaled_tanh_kernel(const float* x, const float* w, float* out, int64_t n,
                                   int64_t cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = tanhf(x[i]) * w[i % cols];
}

torch::Tensor scaled_tanh(torch::Tensor x, torch::Tensor w) {
    auto out = torch::empty_like(x);
    const int64_t n = x.numel();
    scaled_tanh_kernel<<<(n + 255) / 256, 256>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(), n, x.size(1));
    return out;
}
"""


@functools.cache
def extension():
    return load_inline(
        name="arena_test_scaled_tanh_unused",
        cpp_sources="torch::Tensor scaled_tanh(torch::Tensor x, torch::Tensor w);",
        cuda_sources=CUDA_SOURCE,
        functions=["scaled_tanh"],
    )


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))
        extension()  # compiled here, in the build gate's time, not in a timed step's

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return extension().scaled_tanh(x)  # one argument short: raises, never launches
        except Exception:
            decay = torch.exp(-2.0 * x.abs())
            return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
