"""Honest CUDA transpose through load_inline: 32x32 tiles staged in shared memory (padded to 33
columns against bank conflicts), so both the reads and the writes of a warp are coalesced; each
thread of a 32x8 block moves four elements."""

import functools

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
constexpr int TILE = 32;
constexpr int ROWS_PER_PASS = 8;

__global__ void transpose_tiled_kernel(const float* __restrict__ x, float* __restrict__ out,
                                       int64_t rows, int64_t cols) {
    __shared__ float tile[TILE][TILE + 1];
    int64_t col = blockIdx.x * (int64_t)TILE + threadIdx.x;
    int64_t row0 = blockIdx.y * (int64_t)TILE + threadIdx.y;
    for (int i = 0; i < TILE; i += ROWS_PER_PASS) {
        int64_t row = row0 + i;
        if (row < rows && col < cols) tile[threadIdx.y + i][threadIdx.x] = x[row * cols + col];
    }
    __syncthreads();
    int64_t out_col = blockIdx.y * (int64_t)TILE + threadIdx.x;
    int64_t out_row0 = blockIdx.x * (int64_t)TILE + threadIdx.y;
    for (int i = 0; i < TILE; i += ROWS_PER_PASS) {
        int64_t out_row = out_row0 + i;
        if (out_row < cols && out_col < rows)
            out[out_row * rows + out_col] = tile[threadIdx.x][threadIdx.y + i];
    }
}

void transpose_tiled_launch(const float* x, float* out, int64_t rows, int64_t cols,
                            cudaStream_t stream) {
    dim3 threads(TILE, ROWS_PER_PASS);
    dim3 blocks((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_tiled_kernel<<<blocks, threads, 0, stream>>>(x, out, rows, cols);
}
"""

CPP_SOURCE = r"""
#include <ATen/cuda/CUDAContext.h>

void transpose_tiled_launch(const float* x, float* out, int64_t rows, int64_t cols,
                            cudaStream_t stream);

torch::Tensor transpose_tiled(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
                "expected a 2-D fp32 CUDA tensor");
    auto input = x.contiguous();
    auto out = torch::empty({input.size(1), input.size(0)}, input.options());
    if (input.numel() > 0) {
        transpose_tiled_launch(input.data_ptr<float>(), out.data_ptr<float>(), input.size(0),
                               input.size(1), at::cuda::getCurrentCUDAStream());
    }
    return out;
}
"""


@functools.cache
def extension():
    return load_inline(
        name="transpose_cuda_honest",
        cpp_sources=CPP_SOURCE,
        cuda_sources=CUDA_SOURCE,
        functions=["transpose_tiled"],
        extra_cuda_cflags=["-O3"],
    )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        extension()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return extension().transpose_tiled(x)
