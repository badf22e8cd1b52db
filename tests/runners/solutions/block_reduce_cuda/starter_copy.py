"""A naive CUDA row sum through load_inline: one thread per row adding its row serially, so
neighbouring threads read addresses cols * 2 bytes apart and short-row shapes leave most of the
GPU idle.

Needs nvcc, so it runs on GPU machines only; the extension is built when ModelNew is constructed,
inside the build gate's wall-clock limit.
"""

import functools

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <cuda_bf16.h>

__global__ void row_sum_serial_kernel(const __nv_bfloat16* x, float* out, int64_t rows,
                                      int64_t cols) {
    int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const __nv_bfloat16* row_start = x + row * cols;
    float total = 0.0f;
    for (int64_t col = 0; col < cols; ++col) total += __bfloat162float(row_start[col]);
    out[row] = total;
}

void row_sum_serial_launch(const void* x, float* out, int64_t rows, int64_t cols,
                           cudaStream_t stream) {
    const int threads = 256;
    const int64_t blocks = (rows + threads - 1) / threads;
    row_sum_serial_kernel<<<blocks, threads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(x), out, rows, cols);
}
"""

CPP_SOURCE = r"""
#include <ATen/cuda/CUDAContext.h>

void row_sum_serial_launch(const void* x, float* out, int64_t rows, int64_t cols,
                           cudaStream_t stream);

torch::Tensor row_sum_serial(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kBFloat16,
                "expected a 2-D bf16 CUDA tensor");
    auto input = x.contiguous();
    auto out = torch::empty({input.size(0)}, input.options().dtype(torch::kFloat32));
    if (input.size(0) > 0) {
        row_sum_serial_launch(input.data_ptr(), out.data_ptr<float>(), input.size(0),
                              input.size(1), at::cuda::getCurrentCUDAStream());
    }
    return out;
}
"""


@functools.cache
def extension():
    return load_inline(
        name="block_reduce_cuda_starter",
        cpp_sources=CPP_SOURCE,
        cuda_sources=CUDA_SOURCE,
        functions=["row_sum_serial"],
    )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        extension()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return extension().row_sum_serial(x)
