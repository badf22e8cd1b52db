"""Honest CUDA row sum through load_inline: a warp per row for short rows, a 256-thread block per
row for long ones; lanes read consecutive elements (coalesced), keep four independent fp32
partial sums to hold several loads in flight, and reduce with warp shuffles (and shared memory
across the warps of a block)."""

import functools

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <cuda_bf16.h>

__device__ __forceinline__ float warp_total(float value) {
    for (int offset = 16; offset > 0; offset >>= 1)
        value += __shfl_xor_sync(0xffffffffu, value, offset);
    return value;
}

__device__ __forceinline__ float strided_sum(const __nv_bfloat16* __restrict__ row, int64_t cols,
                                             int first, int stride) {
    float a = 0.0f, b = 0.0f, c = 0.0f, d = 0.0f;
    int64_t col = first;
    for (; col + 3 * stride < cols; col += 4 * stride) {
        a += __bfloat162float(row[col]);
        b += __bfloat162float(row[col + stride]);
        c += __bfloat162float(row[col + 2 * stride]);
        d += __bfloat162float(row[col + 3 * stride]);
    }
    for (; col < cols; col += stride) a += __bfloat162float(row[col]);
    return (a + b) + (c + d);
}

__global__ void row_sum_warp_kernel(const __nv_bfloat16* __restrict__ x, float* __restrict__ out,
                                    int64_t rows, int64_t cols) {
    int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows) return;
    float total = warp_total(strided_sum(x + row * cols, cols, threadIdx.x % 32, 32));
    if (threadIdx.x % 32 == 0) out[row] = total;
}

__global__ void row_sum_block_kernel(const __nv_bfloat16* __restrict__ x, float* __restrict__ out,
                                     int64_t cols) {
    __shared__ float partial[32];
    int64_t row = blockIdx.x;
    float total = warp_total(strided_sum(x + row * cols, cols, threadIdx.x, blockDim.x));
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) partial[warp] = total;
    __syncthreads();
    if (warp == 0) {
        total = warp_total(lane < blockDim.x / 32 ? partial[lane] : 0.0f);
        if (lane == 0) out[row] = total;
    }
}

void row_sum_launch(const void* x, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
    auto input = static_cast<const __nv_bfloat16*>(x);
    if (cols <= 2048) {
        const int rows_per_block = 8;
        int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        row_sum_warp_kernel<<<blocks, 32 * rows_per_block, 0, stream>>>(input, out, rows, cols);
    } else {
        row_sum_block_kernel<<<rows, 256, 0, stream>>>(input, out, cols);
    }
}
"""

CPP_SOURCE = r"""
#include <ATen/cuda/CUDAContext.h>

void row_sum_launch(const void* x, float* out, int64_t rows, int64_t cols, cudaStream_t stream);

torch::Tensor row_sum(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kBFloat16,
                "expected a 2-D bf16 CUDA tensor");
    auto input = x.contiguous();
    auto out = torch::empty({input.size(0)}, input.options().dtype(torch::kFloat32));
    if (input.size(0) > 0) {
        row_sum_launch(input.data_ptr(), out.data_ptr<float>(), input.size(0), input.size(1),
                       at::cuda::getCurrentCUDAStream());
    }
    return out;
}
"""


@functools.cache
def extension():
    return load_inline(
        name="block_reduce_cuda_honest",
        cpp_sources=CPP_SOURCE,
        cuda_sources=CUDA_SOURCE,
        functions=["row_sum"],
        extra_cuda_cflags=["-O3"],
    )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        extension()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return extension().row_sum(x)
