"""Gated delta rule (linear attention with a delta-rule state update and a decay gate), forward,
bf16 in, fp32 state, as in Gated DeltaNet layers.

Per batch and head, with k_t and q_t L2-normalised (q_t also scaled by dk ** -0.5), decay
alpha_t = sigmoid(a_t) and write strength beta_t = sigmoid(b_t), the state S (dk x dv, fp32, zero
at t = 0) evolves as
    S_t = alpha_t S_{t-1} + beta_t k_t (v_t - alpha_t S_{t-1}^T k_t)^T
and o_t = S_t^T q_t. Outputs: o (bf16) and the final state S_T (fp32).

The reference computes this exactly (fp32) in the chunked form: within a chunk of 64 steps, the
values written, U, solve a unit lower-triangular system, so every chunk's work is batched and
only the chunk-to-chunk state update is sequential. It is the same recurrence, reordered.

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch = 2
seq = 2048
heads = 16
dk = 128
dv = 128

CHUNK = 64


def _chunked(x: torch.Tensor, chunks: int) -> torch.Tensor:
    """(B, T, H, ...) zero-padded to chunks * CHUNK steps, as (B, H, chunks, CHUNK, ...)."""
    pad = chunks * CHUNK - x.shape[1]
    x = F.pad(x, (0, 0) * (x.dim() - 2) + (0, pad)) if pad else x
    x = x.reshape(x.shape[0], chunks, CHUNK, *x.shape[2:])
    return x.movedim(3, 1)


def _within(gates: torch.Tensor, diagonal: int) -> torch.Tensor:
    """exp(gates_i - gates_j) where j <= i - diagonal, else 0: decay from step j to step i."""
    size = gates.shape[-1]
    keep = torch.ones(size, size, dtype=torch.bool, device=gates.device).tril(-diagonal)
    diff = gates[..., :, None] - gates[..., None, :]
    return torch.exp(diff.masked_fill(~keep, float("-inf")))


class Model(nn.Module):
    def forward(self, q, k, v, a, b):
        steps = q.shape[1]
        chunks = -(-steps // CHUNK)
        q = _chunked(F.normalize(q.float(), dim=-1) * q.shape[-1] ** -0.5, chunks)
        k = _chunked(F.normalize(k.float(), dim=-1), chunks)
        v = _chunked(v.float(), chunks)
        # Padded steps get alpha = 1 and beta = 0: they leave the state alone.
        gates = _chunked(F.logsigmoid(a.float())[..., None], chunks)[..., 0].cumsum(-1)
        beta = _chunked(torch.sigmoid(b.float())[..., None], chunks)[..., 0]
        system = torch.eye(CHUNK, device=q.device) + (
            beta[..., None] * (k @ k.transpose(-1, -2)) * _within(gates, 1)
        )
        solve = torch.linalg.solve_triangular
        written = solve(system, beta[..., None] * v, upper=False, unitriangular=True)
        recalled = solve(
            system, (beta * gates.exp())[..., None] * k, upper=False, unitriangular=True
        )
        to_end = k * torch.exp(gates[..., -1:] - gates)[..., None]
        state = q.new_zeros(q.shape[0], q.shape[1], q.shape[-1], v.shape[-1])
        starts, updates = [], []
        for c in range(chunks):
            update = written[:, :, c] - recalled[:, :, c] @ state
            starts.append(state)
            updates.append(update)
            decay = gates[:, :, c, -1].exp()[..., None, None]
            state = decay * state + to_end[:, :, c].transpose(-1, -2) @ update
        start, update = torch.stack(starts, 2), torch.stack(updates, 2)
        out = gates.exp()[..., None] * (q @ start)
        out = out + ((q @ k.transpose(-1, -2)) * _within(gates, 0)) @ update
        out = out.movedim(1, 3).reshape(q.shape[0], chunks * CHUNK, q.shape[1], -1)
        return out[:, :steps].to(torch.bfloat16), state


def get_inputs():
    q = torch.randn(batch, seq, heads, dk, dtype=torch.bfloat16)
    k = torch.randn(batch, seq, heads, dk, dtype=torch.bfloat16)
    v = torch.randn(batch, seq, heads, dv, dtype=torch.bfloat16)
    a = torch.randn(batch, seq, heads) + 3.0  # decay around sigmoid(3) = 0.95
    b = torch.randn(batch, seq, heads, dtype=torch.bfloat16)
    return [q, k, v, a, b]


def get_init_inputs():
    return []
