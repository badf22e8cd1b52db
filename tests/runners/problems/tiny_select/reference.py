"""Row top-2 of an fp32 matrix on a grid of 1/2 (so that ties are common), and the column sums
of x times a per-column `scale` buffer over groups of rows, ragged in the `ragged` case."""

from itertools import pairwise

import torch
import torch.nn as nn

rows = 12
cols = 10
groups = 4


class Model(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.register_buffer("scale", torch.ones(cols))

    def forward(self, x: torch.Tensor, offsets: torch.Tensor):
        values, indices = torch.sort(x, dim=-1, descending=True, stable=True)
        bounds = offsets.tolist()
        sums = torch.stack([(x[a:b] * self.scale).sum(0) for a, b in pairwise(bounds)])
        return values[:, :2].contiguous(), indices[:, :2].contiguous(), sums


def _grid() -> torch.Tensor:
    return torch.round(torch.randn(rows, cols) * 2.0) / 2.0 + 0.0


def get_inputs():
    """Groups of equal size (the last takes the remainder)."""
    offsets = torch.arange(groups + 1) * (rows // groups)
    offsets[-1] = rows
    return [_grid(), offsets]


def ragged_inputs():
    """Groups cut at random rows, the first one empty."""
    cuts = torch.randint(0, rows + 1, (groups - 1,)).sort().values
    offsets = torch.cat([torch.zeros(2, dtype=torch.long), cuts[1:], torch.tensor([rows])])
    return [_grid(), offsets]


def get_init_inputs():
    return [cols]
