"""Honest RMSNorm: one program per row, fp32 accumulation over column chunks."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, weight_ptr, out_ptr, hidden, eps, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * hidden
    squares = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, hidden, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row_start + offsets, mask=offsets < hidden, other=0.0).to(tl.float32)
        squares += x * x
    inv_rms = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / hidden + eps)
    for start in range(0, hidden, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < hidden
        x = tl.load(x_ptr + row_start + offsets, mask=mask, other=0.0).to(tl.float32)
        weight = tl.load(weight_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row_start + offsets, (x * inv_rms * weight).to(tl.bfloat16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        tokens, hidden = x.shape
        out = torch.empty_like(x)
        block = min(triton.next_power_of_2(hidden), 4096)
        rmsnorm_kernel[(tokens,)](x, self.weight, out, hidden, self.eps, BLOCK=block)
        return out
