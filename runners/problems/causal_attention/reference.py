"""Causal self-attention forward over ragged (packed, variable-length) sequences, bf16, as in
FlashAttention's varlen interface.

q, k and v hold the tokens of all sequences back to back, (total, heads, head_dim); sequence b
is rows cu_seqlens[b] to cu_seqlens[b + 1]. Token i of a sequence attends to tokens 0..i of the
same sequence, with scale 1 / sqrt(head_dim). Lengths come in pairs seq - seq // 3 and
seq + seq // 3 (an odd one out has seq), in an order that changes with the seed.

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

from itertools import pairwise

import torch
import torch.nn as nn
import torch.nn.functional as F

batch = 8
seq = 1024  # the mean sequence length
heads = 16
head_dim = 128


class Model(nn.Module):
    """Exact: scores, causal softmax and the weighted sum in fp32, one rounding to bf16."""

    def forward(self, q, k, v, cu_seqlens):
        out = torch.empty_like(q)
        bounds = cu_seqlens.tolist()
        for start, end in pairwise(bounds):
            qs, ks, vs = (t[start:end].float().transpose(0, 1) for t in (q, k, v))
            scores = qs @ ks.transpose(1, 2) / q.shape[-1] ** 0.5
            future = torch.ones(end - start, end - start, dtype=torch.bool, device=q.device)
            scores = scores.masked_fill(future.triu(1), float("-inf"))
            attended = torch.softmax(scores, dim=-1) @ vs
            out[start:end] = attended.transpose(0, 1).to(torch.bfloat16)
        return out


class Library(Model):
    """The library line: PyTorch SDPA (flash backend on bf16) per sequence, causal."""

    def forward(self, q, k, v, cu_seqlens):
        out = torch.empty_like(q)
        bounds = cu_seqlens.tolist()
        for start, end in pairwise(bounds):
            qs, ks, vs = (t[start:end].transpose(0, 1).unsqueeze(0) for t in (q, k, v))
            attended = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True)
            out[start:end] = attended.squeeze(0).transpose(0, 1)
        return out


def sequence_lengths() -> torch.Tensor:
    spread = seq // 3
    pairs = torch.tensor([seq - spread, seq + spread]).repeat(batch // 2)
    lengths = torch.cat([pairs, torch.full((batch % 2,), seq)])
    return lengths[torch.randperm(batch)]


def get_inputs():
    lengths = sequence_lengths()
    cu_seqlens = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lengths, 0)])
    total = batch * seq
    q, k, v = (torch.randn(total, heads, head_dim, dtype=torch.bfloat16) for _ in range(3))
    return [q, k, v, cu_seqlens.int()]


def get_init_inputs():
    return []
