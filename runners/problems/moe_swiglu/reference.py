"""MoE SwiGLU up-projection as a grouped GEMM over ragged, unbalanced routing (bf16).

x holds the routed token copies (tokens * topk rows) already sorted by expert; rows offsets[e] to
offsets[e + 1] go to expert e. Each expert e multiplies its rows by weight[e] (hidden, 2 * inter)
and returns silu(gate) * up, gate and up being the first and second halves of the product. Per
seed, experts // 8 experts get no rows and the others a skewed share (at least one row each).

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

from itertools import pairwise

import torch
import torch.nn as nn
import torch.nn.functional as F

tokens = 2048
hidden = 2048
inter = 768
experts = 64
topk = 8


class Model(nn.Module):
    """Exact: each expert's rows and weights widened to fp32, fp32 GEMM and SwiGLU, one rounding."""

    def __init__(self, experts: int, hidden: int, inter: int):
        super().__init__()
        weight = torch.randn(experts, hidden, 2 * inter) * hidden**-0.5
        self.weight = nn.Parameter(weight.to(torch.bfloat16))

    def forward(self, x: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        inter = self.weight.shape[2] // 2
        out = torch.empty(x.shape[0], inter, dtype=torch.bfloat16, device=x.device)
        bounds = offsets.tolist()
        for expert, (start, end) in enumerate(pairwise(bounds)):
            if end > start:
                both = x[start:end].float() @ self.weight[expert].float()
                out[start:end] = (F.silu(both[:, :inter]) * both[:, inter:]).to(torch.bfloat16)
        return out


class Library(Model):
    """The library line: PyTorch's grouped GEMM (torch._grouped_mm, bf16), then SwiGLU."""

    def forward(self, x: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        inter = self.weight.shape[2] // 2
        both = torch._grouped_mm(x, self.weight, offs=offsets[1:])
        return F.silu(both[:, :inter]) * both[:, inter:]


def expert_counts(rows: int, count: int) -> torch.Tensor:
    """Rows per expert: count // 8 random experts empty, the others one row each plus a share of
    the rest drawn with log-normal popularity, so routing is ragged and changes with the seed."""
    empty = torch.randperm(count)[: count // 8]
    popularity = torch.exp(torch.randn(count) * 1.5)
    popularity[empty] = 0.0
    busy = count - count // 8
    picks = torch.multinomial(popularity, rows - busy, replacement=True)
    counts = torch.bincount(picks, minlength=count) + (popularity > 0).long()
    return counts


def ragged_counts(rows: int, count: int) -> torch.Tensor:
    """Rows per expert at the routing's extremes: count // 8 experts empty as in expert_counts,
    among them the last and, from two on, the first; one expert gets half of the rows beyond one
    each; the others one row each plus an even random share of the rest."""
    empty = count // 8
    middle = torch.randperm(max(count - 2, 0))[: max(empty - 2, 0)] + 1
    ends = torch.tensor([count - 1, 0][:empty], dtype=torch.long)
    counts = torch.ones(count, dtype=torch.long)
    counts[torch.cat([ends, middle])] = 0
    busy = counts.nonzero().flatten()
    rest = rows - busy.numel()
    counts[busy[torch.randint(busy.numel(), (1,))]] += rest // 2
    shares = torch.randint(busy.numel(), (rest - rest // 2,))
    counts[busy] += torch.bincount(shares, minlength=busy.numel())
    return counts


def _routed(counts: torch.Tensor) -> list[torch.Tensor]:
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(counts, 0)])
    x = torch.randn(tokens * topk, hidden, dtype=torch.bfloat16)
    return [x, offsets.int()]


def get_inputs():
    return _routed(expert_counts(tokens * topk, experts))


def ragged_inputs():
    """The `ragged` case of problem.yaml: get_inputs with ragged_counts' routing."""
    return _routed(ragged_counts(tokens * topk, experts))


def get_init_inputs():
    return [experts, hidden, inter]
