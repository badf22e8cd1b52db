"""Paged-attention decode with grouped-query attention (bf16), as in an LLM serving engine.

One query token per sequence attends over that sequence's cached keys and values, which live in
fixed-size pages scattered through a shared pool; block_table lists each sequence's pages in
order and context_lens its length. Lengths differ per sequence and per seed; entries of
block_table past a sequence's last page are arbitrary and must be ignored.

The engine sets the shape globals below before calling get_inputs/get_init_inputs; the values here
are defaults. get_inputs returns tensors on the current default device.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch = 32
heads = 32
kv_heads = 8
head_dim = 128
seq_len = 2048  # the mean context length; lengths range from 1 to 2 * seq_len - 1
page = 16


def _gather(cache: torch.Tensor, block_table: torch.Tensor) -> torch.Tensor:
    """(batch, max_pages * page, kv_heads, head_dim): each sequence's pages, in order."""
    pages = cache[block_table.long()]
    return pages.reshape(block_table.shape[0], -1, cache.shape[2], cache.shape[3])


class Model(nn.Module):
    """Exact: scores, softmax and the weighted sum in fp32, one rounding to bf16."""

    def forward(self, q, k_cache, v_cache, block_table, context_lens):
        b, h, d = q.shape
        kvh = k_cache.shape[2]
        keys = _gather(k_cache, block_table).float()
        values = _gather(v_cache, block_table).float()
        queries = q.float().reshape(b, kvh, h // kvh, d)
        scores = torch.einsum("bkgd,btkd->bkgt", queries, keys) / d**0.5
        positions = torch.arange(keys.shape[1], device=q.device)
        beyond = positions >= context_lens.long()[:, None, None, None]
        probs = torch.softmax(scores.masked_fill(beyond, float("-inf")), dim=-1)
        out = torch.einsum("bkgt,btkd->bkgd", probs, values)
        return out.reshape(b, h, d).to(torch.bfloat16)


class Library(Model):
    """The library line: the pages gathered, then PyTorch SDPA with a length mask and GQA."""

    def forward(self, q, k_cache, v_cache, block_table, context_lens):
        keys = _gather(k_cache, block_table).transpose(1, 2)
        values = _gather(v_cache, block_table).transpose(1, 2)
        positions = torch.arange(keys.shape[2], device=q.device)
        within = positions < context_lens.long()[:, None, None, None]
        out = F.scaled_dot_product_attention(
            q.unsqueeze(2), keys, values, attn_mask=within, enable_gqa=True
        )
        return out.squeeze(2)


def _context_lengths() -> torch.Tensor:
    """Pairs of lengths seq_len + d and seq_len - d (d random per pair), shuffled; an odd one out
    has seq_len. The total is always batch * seq_len, so flops and bytes are exact."""
    half = batch // 2
    deltas = torch.randint(-(seq_len - 1), seq_len, (half,))
    lengths = torch.cat([seq_len + deltas, seq_len - deltas, torch.full((batch % 2,), seq_len)])
    return lengths[torch.randperm(batch)]


def get_inputs():
    lengths = _context_lengths()
    max_pages = (2 * seq_len + page - 1) // page
    used = (lengths + page - 1) // page
    # Every seed's inputs have the same shapes: the pool holds at least the pages in use (each
    # sequence wastes less than one page) plus spare pages that no sequence owns.
    pool = batch * seq_len // page + 2 * batch
    order = torch.randperm(pool)
    block_table = torch.randint(0, pool, (batch, max_pages))
    starts = torch.cumsum(used, 0) - used
    for row in range(batch):
        count = int(used[row])
        block_table[row, :count] = order[int(starts[row]) : int(starts[row]) + count]
    q = torch.randn(batch, heads, head_dim, dtype=torch.bfloat16)
    k_cache = torch.randn(pool, page, kv_heads, head_dim, dtype=torch.bfloat16)
    v_cache = torch.randn(pool, page, kv_heads, head_dim, dtype=torch.bfloat16)
    return [q, k_cache, v_cache, block_table.int(), lengths.int()]


def get_init_inputs():
    return []
