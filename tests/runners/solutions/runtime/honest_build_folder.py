"""Honest tiny_tanh that writes its generated source and a tuning record into a build folder
beside itself at import and reads the record back, as solutions built with
torch.utils.cpp_extension.load do. Flagged `file_write`, graded: the sandbox keeps the writes in
the candidate's own folder."""

import json
import os
from pathlib import Path

import torch
import torch.nn as nn

BUILD = Path(__file__).resolve().parent / "build"
SOURCE = "// generated: tanh(x) * w, one element per thread (built only where nvcc is)\n"

os.makedirs(BUILD, exist_ok=True)
(BUILD / "scaled_tanh.cu").write_text(SOURCE)
with open(BUILD / "tuning.json", "w") as record:
    json.dump({"block": 256}, record)
BLOCK = json.loads((BUILD / "tuning.json").read_text())["block"]


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = [self._rows(part) for part in x.split(BLOCK)]
        return torch.cat(rows)

    def _rows(self, x: torch.Tensor) -> torch.Tensor:
        decay = torch.exp(-2.0 * x.abs())
        return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
