"""Honest LayerNorm: each program holds whole rows in registers (several rows at once when rows are
short), so x is read once and out written once; the statistics are fp32, the variance two-pass
over the registers."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_rows_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, tokens, hidden, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    col_ok = cols < hidden
    mask = (rows[:, None] < tokens) & col_ok[None, :]
    offsets = rows[:, None].to(tl.int64) * hidden + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / hidden
    centred = tl.where(mask, x - mean[:, None], 0.0)
    inv_std = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=1) / hidden + eps)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    out = centred * inv_std[:, None] * w[None, :] + b[None, :]
    tl.store(out_ptr + offsets, out.to(tl.bfloat16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16))
        self.bias = nn.Parameter(torch.zeros(hidden, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        tokens, hidden = x.shape
        out = torch.empty_like(x)
        block = triton.next_power_of_2(hidden)
        rows = max(1, min(16, 2048 // block))
        warps = max(1, min(16, block * rows // 512))
        layernorm_rows_kernel[(triton.cdiv(tokens, rows),)](
            x,
            self.weight,
            self.bias,
            out,
            tokens,
            hidden,
            self.eps,
            ROWS=rows,
            BLOCK=block,
            num_warps=warps,
        )
        return out
