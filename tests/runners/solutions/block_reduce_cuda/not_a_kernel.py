"""Row sums in plain PyTorch (a running add over the columns, no forbidden reduction), no CUDA
extension: the cuda-to-cuda category rejects it at the static gate."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        total = torch.zeros(x.shape[0], dtype=torch.float32, device=x.device)
        for column in x.float().unbind(1):
            total += column
        return total
