"""Structural input cases for imported KernelBench-Hard problems, copied into their reference.py.

KernelBench-Hard draws such cases with Hypothesis inside its own checker (property_stress.py:
ragged MoE routing, clustered top-k maxima, short paged sequences); our format names a function
of reference.py that the engine calls instead of `get_inputs()` (`cases: {name: {generator: ...}}`
in problem.yaml). These are our own versions. Each takes the inputs `get_inputs()` drew and
returns inputs of the same shapes, dtypes and devices (the timing loop refills one set of buffers
with every input set), drawn from torch's global generator so that every seed gives another
case. Their source is appended to reference.py, so they use torch alone and no other function
of this module.
"""

import torch


def ragged_routing(inputs):
    """MoE rows spread over the experts unevenly: some experts get many times the mean, so tile
    boundaries fall anywhere and a kernel that assumes balanced routing fails. Every expert keeps
    at least one row where there are enough rows, as the byte formula reads every expert's
    weights."""
    hidden, offsets = inputs
    experts, rows = offsets.numel() - 1, hidden.shape[0]
    counts = torch.zeros(experts, dtype=torch.int64, device=offsets.device)
    counts[: min(rows, experts)] = 1
    spare = rows - int(counts.sum())
    if spare:
        weights = torch.rand(experts, device=offsets.device).pow(4) + 1e-3
        picks = torch.multinomial(weights, spare, replacement=True)
        counts += torch.bincount(picks, minlength=experts)
    ragged = torch.zeros_like(offsets)
    ragged[1:] = counts.cumsum(0).to(offsets.dtype)
    return [hidden, ragged]


def clustered_ties(inputs):
    """Rows whose largest values sit together in one short window at a random column, every value
    there twice: a kernel that splits rows into tiles finds all winners in one tile, and any k
    falls on or inside a tie (indices are compared up to ties). The rest is noise below them."""
    (x,) = inputs
    rows, n = x.shape
    window = min(n, 72)
    out = torch.rand(rows, n, device=x.device) * 0.5
    levels = 1.0 + (window - 1 - torch.arange(window, device=x.device)) // 2 * 0.0625
    starts = torch.randint(0, n - window + 1, (rows, 1), device=x.device)
    columns = starts + torch.arange(window, device=x.device)
    out.scatter_(1, columns, levels.float().expand(rows, window).contiguous())
    return [out.to(x.dtype)]


def short_sequences(inputs):
    """Decode batches whose sequences are not all full: lengths drawn from 1 to the full length
    (the first kept full), so a kernel must follow seq_lens and mask the last page."""
    query, kv_cache, block_table, seq_lens = inputs
    full = int(seq_lens.max())
    lengths = torch.randint(1, full + 1, seq_lens.shape, device=seq_lens.device)
    lengths[0] = full
    return [query, kv_cache, block_table, lengths.to(seq_lens.dtype)]
