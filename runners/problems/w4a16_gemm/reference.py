"""W4A16 GEMM: bf16 activations times int4 weights with group-wise scales and zero points, as in
an AWQ/GPTQ-style quantized linear layer. out = x @ W.T, where W is the weight as a bf16 kernel
holds it: W[j, i] = bf16((q[j, i] - zero) * scale), the scale and zero of row j's group i // group,
the product taken exactly and rounded once to bf16.

Weights are packed two per byte along k: byte (j, i // 2) holds q[j, i] for even i in its low
nibble and q[j, i + 1] in its high nibble. Zero points are uint8 in [0, 15].

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

import torch
import torch.nn as nn

m = 16
n = 14336
k = 4096
group = 128


def dequantize(qweight, scales, zeros):
    """(n, k) bf16 weights from packed nibbles and per-group scales and zero points."""
    rows, half = qweight.shape
    nibbles = torch.stack([qweight & 0xF, qweight >> 4], dim=-1).reshape(rows, 2 * half)
    size = 2 * half // scales.shape[1]
    scale = scales.float().repeat_interleave(size, dim=1)
    zero = zeros.float().repeat_interleave(size, dim=1)
    return ((nibbles.float() - zero) * scale).to(torch.bfloat16)


class Model(nn.Module):
    """Exact given W: fp32 products and sums, one rounding to bf16."""

    def forward(self, x, qweight, scales, zeros):
        weights = dequantize(qweight, scales, zeros).float()
        return (x.float() @ weights.T).to(torch.bfloat16)


class Library(Model):
    """The library line: weights dequantized to bf16 in memory, then cuBLAS bf16 GEMM."""

    def forward(self, x, qweight, scales, zeros):
        return x @ dequantize(qweight, scales, zeros).T


def get_inputs():
    x = torch.randn(m, k, dtype=torch.bfloat16)
    qweight = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8)
    scales = (torch.rand(n, k // group) * 0.02 + 0.005).to(torch.bfloat16)
    zeros = torch.randint(0, 16, (n, k // group), dtype=torch.uint8)
    return [x, qweight, scales, zeros]


def get_init_inputs():
    return []
