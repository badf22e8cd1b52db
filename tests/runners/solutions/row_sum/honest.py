"""Honest row sum in Triton: one program per row, fp32 partial sums over column chunks."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_start = row.to(tl.int64) * cols
    partial = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        partial += tl.load(x_ptr + row_start + offsets, mask=offsets < cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(partial, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        block = min(triton.next_power_of_2(cols), 4096)
        row_sum_kernel[(rows,)](x, out, cols, BLOCK=block)
        return out
