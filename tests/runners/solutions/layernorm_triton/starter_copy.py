"""A naive Triton LayerNorm: one program per row, three passes over the row in 256-wide blocks
(the mean, then the variance, then the normalised output), so x is read three times."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_row_kernel(x_ptr, w_ptr, b_ptr, out_ptr, hidden, eps, BLOCK: tl.constexpr):
    row_start = tl.program_id(0).to(tl.int64) * hidden
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, hidden, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + row_start + cols, mask=cols < hidden, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / hidden
    squares = tl.zeros([BLOCK], tl.float32)
    for start in range(0, hidden, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row_start + cols, mask=cols < hidden, other=0.0).to(tl.float32)
        centred = tl.where(cols < hidden, x - mean, 0.0)
        squares += centred * centred
    inv_std = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / hidden + eps)
    for start in range(0, hidden, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < hidden
        x = tl.load(x_ptr + row_start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        out = (x - mean) * inv_std * w + b
        tl.store(out_ptr + row_start + cols, out.to(tl.bfloat16), mask=mask)


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
        layernorm_row_kernel[(tokens,)](x, self.weight, self.bias, out, hidden, self.eps, BLOCK=256)
        return out
