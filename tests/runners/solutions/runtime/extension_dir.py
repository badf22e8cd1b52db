"""Checks where a first-call load_inline would build: TORCH_EXTENSIONS_DIR inside the candidate's
private working folder (its HOME, mode 0700). Returns the right answer if so, garbage if not."""

import os
import stat
from pathlib import Path

import torch
import torch.nn as nn
from torch.utils import cpp_extension


def private_build_dir() -> bool:
    home = Path(os.getcwd()).resolve()
    configured = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not configured or Path(os.environ.get("HOME", "/")).resolve() != home:
        return False
    build = Path(cpp_extension._get_build_directory("arena_probe", verbose=False)).resolve()
    return build.is_relative_to(home) and stat.S_IMODE(home.stat().st_mode) == 0o700


PRIVATE = private_build_dir()


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not PRIVATE:
            return torch.full_like(x, 7.0)
        return torch.tanh(x) * self.weight
