"""Wrong only through a perturbed buffer: it takes `scale` for the ones it starts as."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.register_buffer("scale", torch.ones(cols))

    def forward(self, x: torch.Tensor, offsets: torch.Tensor):
        values, order = torch.sort(x.flip(-1), dim=-1, descending=True, stable=True)
        indices = x.shape[-1] - 1 - order[:, :2]
        rows = torch.arange(x.shape[0], device=x.device)
        group = torch.searchsorted(offsets[1:].contiguous(), rows, right=True)
        sums = torch.zeros(offsets.numel() - 1, x.shape[1], dtype=x.dtype, device=x.device)
        sums.index_add_(0, group, x)
        return values[:, :2].contiguous(), indices.contiguous(), sums
