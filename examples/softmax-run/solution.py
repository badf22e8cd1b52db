"""Honest softmax: online max/sum over column chunks, then one normalising pass."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * cols
    running_max = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    running_sum = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row_start + offsets, mask=offsets < cols, other=-float("inf"))
        new_max = tl.maximum(running_max, x)
        # Lanes that have seen only padding keep max -inf; guard the -inf - -inf NaN.
        safe_max = tl.where(new_max == -float("inf"), 0.0, new_max)
        running_sum = running_sum * tl.exp(running_max - safe_max) + tl.exp(x - safe_max)
        running_max = new_max
    row_max = tl.max(running_max, axis=0)
    row_sum = tl.sum(running_sum * tl.exp(running_max - row_max), axis=0)
    for start in range(0, cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(x_ptr + row_start + offsets, mask=mask, other=-float("inf"))
        tl.store(out_ptr + row_start + offsets, tl.exp(x - row_max) / row_sum, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        block = min(triton.next_power_of_2(cols), 2048)
        softmax_kernel[(rows,)](x, out, cols, BLOCK=block)
        return out
