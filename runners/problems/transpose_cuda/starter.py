"""A naive CUDA transpose through load_inline: one thread per element, reads along a row
(coalesced) and writes down a column, so every warp's stores land cols * 4 bytes apart.

Needs nvcc, so it runs on GPU machines only; the extension is built when ModelNew is constructed,
inside the build gate's wall-clock limit.
"""

import functools

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
__global__ void transpose_naive_kernel(const float* x, float* out, int64_t rows, int64_t cols) {
    int64_t col = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t row = blockIdx.y * (int64_t)blockDim.y + threadIdx.y;
    if (row < rows && col < cols) out[col * rows + row] = x[row * cols + col];
}

void transpose_naive_launch(const float* x, float* out, int64_t rows, int64_t cols,
                            cudaStream_t stream) {
    dim3 threads(32, 8);
    dim3 blocks((cols + 31) / 32, (rows + 7) / 8);
    transpose_naive_kernel<<<blocks, threads, 0, stream>>>(x, out, rows, cols);
}
"""

CPP_SOURCE = r"""
#include <ATen/cuda/CUDAContext.h>

void transpose_naive_launch(const float* x, float* out, int64_t rows, int64_t cols,
                            cudaStream_t stream);

torch::Tensor transpose_naive(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
                "expected a 2-D fp32 CUDA tensor");
    auto input = x.contiguous();
    auto out = torch::empty({input.size(1), input.size(0)}, input.options());
    if (input.numel() > 0) {
        transpose_naive_launch(input.data_ptr<float>(), out.data_ptr<float>(), input.size(0),
                               input.size(1), at::cuda::getCurrentCUDAStream());
    }
    return out;
}
"""


@functools.cache
def extension():
    return load_inline(
        name="transpose_cuda_starter",
        cpp_sources=CPP_SOURCE,
        cuda_sources=CUDA_SOURCE,
        functions=["transpose_naive"],
    )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        extension()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return extension().transpose_naive(x)
