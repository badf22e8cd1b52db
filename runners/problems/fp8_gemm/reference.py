"""FP8 (e4m3) GEMM with per-row and per-column scales and a bf16 output: out = (a @ b.T) * a_scale
* b_scale, as in an fp8-quantized linear layer (a: activations, b: weights stored (n, k)).

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

import torch
import torch.nn as nn

m = 4096
n = 4096
k = 4096

FP8 = torch.float8_e4m3fn


class Model(nn.Module):
    """Exact: fp8 values widened to fp32, products and sums in fp32, one rounding to bf16."""

    def forward(self, a, b, a_scale, b_scale):
        out = (a.float() @ b.float().T) * a_scale * b_scale
        return out.to(torch.bfloat16)


class Library(Model):
    """The library line: cuBLAS fp8 through torch._scaled_mm (row-wise scales), with k and n
    zero-padded to multiples of 16 where its alignment rules require it."""

    def forward(self, a, b, a_scale, b_scale):
        rows, cols = b.shape[0], a.shape[1]
        a = _pad_fp8(a, a.shape[0], _round16(cols))
        b = _pad_fp8(b, _round16(rows), _round16(cols))
        b_scale = torch.nn.functional.pad(b_scale, (0, b.shape[0] - rows))
        out = torch._scaled_mm(a, b.T, scale_a=a_scale, scale_b=b_scale, out_dtype=torch.bfloat16)
        return out[:, :rows]


def _round16(size: int) -> int:
    return -(-size // 16) * 16


def _pad_fp8(x: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    if x.shape == (rows, cols):
        return x
    padded = torch.zeros(rows, cols, dtype=torch.uint8, device=x.device)
    padded[: x.shape[0], : x.shape[1]] = x.view(torch.uint8)
    return padded.view(FP8)


def _fp8(x: torch.Tensor) -> torch.Tensor:
    return x.clamp(-448.0, 448.0).to(FP8)


def get_inputs():
    a = _fp8(torch.randn(m, k))
    b = _fp8(torch.randn(n, k))
    a_scale = torch.rand(m, 1) + 0.5
    b_scale = torch.rand(1, n) + 0.5
    return [a, b, a_scale, b_scale]


def get_init_inputs():
    return []
