"""Honest fused add + RMSNorm: one program per row; the fp32 sum is stored as the bf16 residual
in the first pass and read back for the normalising pass."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_rmsnorm_kernel(
    x_ptr, res_ptr, w_ptr, out_ptr, res_out_ptr, hidden, eps, BLOCK: tl.constexpr
):
    row_start = tl.program_id(0).to(tl.int64) * hidden
    squares = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, hidden, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < hidden
        x = tl.load(x_ptr + row_start + offsets, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(res_ptr + row_start + offsets, mask=mask, other=0.0).to(tl.float32)
        h = x + r
        squares += h * h
        tl.store(res_out_ptr + row_start + offsets, h.to(tl.bfloat16), mask=mask)
    inv_rms = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / hidden + eps)
    for start in range(0, hidden, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < hidden
        x = tl.load(x_ptr + row_start + offsets, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(res_ptr + row_start + offsets, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row_start + offsets, ((x + r) * inv_rms * w).to(tl.bfloat16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        x, residual = x.contiguous(), residual.contiguous()
        tokens, hidden = x.shape
        out, res_out = torch.empty_like(x), torch.empty_like(x)
        block = min(triton.next_power_of_2(hidden), 4096)
        add_rmsnorm_kernel[(tokens,)](
            x, residual, self.weight, out, res_out, hidden, self.eps, BLOCK=block
        )
        return out, res_out
