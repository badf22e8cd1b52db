"""Cheat: CUDA kernels built with load_inline, never run, and named like the PyTorch kernels
that the fallback runs (hack 24, GPU only): `vectorized_elementwise_kernel` and
`elementwise_kernel`, so that a name match anywhere in `void at::native::...` would credit them."""

import functools

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>

__global__ void vectorized_elementwise_kernel(const float* x, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = tanhf(x[i]);
}

__global__ void elementwise_kernel(float* out, const float* w, int64_t n, int64_t cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] *= w[i % cols];
}

torch::Tensor scaled_tanh(torch::Tensor x, torch::Tensor w) {
    auto out = torch::empty_like(x);
    const int64_t n = x.numel();
    vectorized_elementwise_kernel<<<(n + 255) / 256, 256>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), n);
    elementwise_kernel<<<(n + 255) / 256, 256>>>(
        out.data_ptr<float>(), w.data_ptr<float>(), n, x.size(1));
    return out;
}
"""


@functools.cache
def extension():
    return load_inline(
        name="arena_test_scaled_tanh_misnamed",
        cpp_sources="torch::Tensor scaled_tanh(torch::Tensor x, torch::Tensor w);",
        cuda_sources=CUDA_SOURCE,
        functions=["scaled_tanh"],
    )


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))
        extension()  # built, so the solution looks like a CUDA one; never called

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        decay = torch.exp(-2.0 * x.abs())
        return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
