"""Honest tiny_tanh in Triton, replayed from a CUDA graph on the GPU: one graph per input
address, its kernel launched once while the graph is captured and never again from Python. The
control for the launch check on graph replays (a replay runs the captured kernel: every timed
call launches one). On the CPU it launches the kernel directly. Flagged `cuda_graph`, graded."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_kernel(x_ptr, w_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    w = tl.load(w_ptr + offsets % cols, mask=mask)
    decay = tl.exp(-2.0 * tl.abs(x))
    sign = tl.where(x < 0, -1.0, 1.0)
    tl.store(out_ptr + offsets, sign * (1.0 - decay) / (1.0 + decay) * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))
        self.graphs: dict[
            tuple[int, tuple[int, ...]], tuple[torch.cuda.CUDAGraph, torch.Tensor]
        ] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        if not x.is_cuda:
            return self.launch(x, torch.empty_like(x))
        key = (x.data_ptr(), tuple(x.shape))
        if key not in self.graphs:
            out = self.launch(x, torch.empty_like(x))  # compiles the kernel outside the capture
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.launch(x, out)
            self.graphs[key] = (graph, out)
        graph, out = self.graphs[key]
        graph.replay()
        return out.clone()

    def launch(self, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        grid = (triton.cdiv(x.numel(), 256),)
        tanh_kernel[grid](x, self.weight, out, x.numel(), x.shape[1], BLOCK=256)
        return out
