"""Honest tiny_tanh that replays a CUDA graph on the GPU: one graph per input address, captured
after a warm-up on a side stream forked from the current one and joined back, as in PyTorch's
own recipe. A replay reads whatever the captured address holds now, so fresh inputs give fresh
outputs. On the CPU it computes eagerly. Flagged `cuda_graph` and `side_stream`, graded."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))
        self.graphs: dict[
            tuple[int, tuple[int, ...]], tuple[torch.cuda.CUDAGraph, torch.Tensor]
        ] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda:
            return self.compute(x)
        key = (x.data_ptr(), tuple(x.shape))
        if key not in self.graphs:
            self.graphs[key] = self.capture(x)
        graph, out = self.graphs[key]
        graph.replay()
        return out.clone()

    def compute(self, x: torch.Tensor) -> torch.Tensor:
        decay = torch.exp(-2.0 * x.abs())
        return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight

    def capture(self, x: torch.Tensor) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
        warm = torch.cuda.Stream()
        warm.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(warm):
            self.compute(x)
        torch.cuda.current_stream().wait_stream(warm)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self.compute(x)
        return graph, out
