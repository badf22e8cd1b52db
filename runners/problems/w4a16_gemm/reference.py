"""W4A16 GEMM: bf16 activations times int4 weights with group-wise scales and zero points, as in
an AWQ/GPTQ-style quantized linear layer. out = x @ W.T with W[j, i] = (q[j, i] - zero) * scale,
the scale and zero of row j's group i // group.

Weights are packed two per byte along k: byte (j, i // 2) holds q[j, i] for even i in its low
nibble and q[j, i + 1] in its high nibble.

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

import torch
import torch.nn as nn

m = 16
n = 14336
k = 4096
group = 128


def dequantize(qweight, scales, zeros, dtype=torch.float32):
    """(n, k) weights from packed nibbles and per-group scales and zero points."""
    rows, half = qweight.shape
    nibbles = torch.stack([qweight & 0xF, qweight >> 4], dim=-1).reshape(rows, 2 * half)
    size = 2 * half // scales.shape[1]
    scale = scales.to(dtype).repeat_interleave(size, dim=1)
    zero = zeros.to(dtype).repeat_interleave(size, dim=1)
    return (nibbles.to(dtype) - zero) * scale


class Model(nn.Module):
    """Exact: weights dequantized in fp32, fp32 products and sums, one rounding to bf16."""

    def forward(self, x, qweight, scales, zeros):
        weights = dequantize(qweight, scales, zeros)
        return (x.float() @ weights.T).to(torch.bfloat16)


class Library(Model):
    """The library line: weights dequantized to bf16, then cuBLAS bf16 GEMM."""

    def forward(self, x, qweight, scales, zeros):
        return x @ dequantize(qweight, scales, zeros, torch.bfloat16).T


def get_inputs():
    x = torch.randn(m, k, dtype=torch.bfloat16)
    qweight = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8)
    scales = (torch.rand(n, k // group) * 0.02 + 0.005).to(torch.bfloat16)
    zeros = torch.randint(0, 16, (n, k // group)).to(torch.bfloat16)
    return [x, qweight, scales, zeros]


def get_init_inputs():
    return []
