"""Honest tiny_tanh as a CUDA kernel built with load_inline (GPU only): the launch check's
control for kernels that Python never sees launch."""

import functools

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

__global__ void scaled_tanh_kernel(const float* x, const float* w, float* out, int64_t n,
                                   int64_t cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = tanhf(x[i]) * w[i % cols];
}

torch::Tensor scaled_tanh(torch::Tensor x, torch::Tensor w) {
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t n = input.numel();
    const int threads = 256;
    scaled_tanh_kernel<<<(n + threads - 1) / threads, threads, 0,
                         at::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(), n, input.size(1));
    return out;
}
"""


@functools.cache
def extension():
    return load_inline(
        name="arena_test_scaled_tanh",
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
        return extension().scaled_tanh(x, self.weight)
