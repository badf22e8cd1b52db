"""A naive Triton starter: one program per row, walking its columns 16 at a time."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_row_kernel(x_ptr, w_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row_start = tl.program_id(0) * cols
    for start in range(0, cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(x_ptr + row_start + offsets, mask=mask)
        w = tl.load(w_ptr + offsets, mask=mask)
        decay = tl.exp(-2.0 * tl.abs(x))
        sign = tl.where(x < 0, -1.0, 1.0)
        tl.store(out_ptr + row_start + offsets, sign * (1.0 - decay) / (1.0 + decay) * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        tanh_row_kernel[(rows,)](x, self.weight, out, cols, BLOCK=16)
        return out
