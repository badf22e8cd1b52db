"""Honest tiny_tanh in Triton: the control for the launch check (every call runs the kernel)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_kernel(x_ptr, w_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    w = tl.load(w_ptr + offsets % cols, mask=mask)
    decay = tl.exp(-2.0 * tl.abs(x))
    sign = tl.where(x < 0, -1.0, 1.0)
    tl.store(out_ptr + offsets, sign * (1.0 - decay) / (1.0 + decay) * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        grid = (triton.cdiv(x.numel(), 256),)
        tanh_kernel[grid](x, self.weight, out, x.numel(), x.shape[1], BLOCK=256)
        return out
