"""Correct top-k that orders equal values by descending index (the reference: ascending), as
honest.py with the index bits of its keys not complemented. Passes because indices are compared
up to ties; with an exact comparison of indices it would fail wherever a row's top k has ties."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def chunk_topk_kernel(
    src_ptr,
    dst_ptr,
    length,
    chunks,
    FROM_VALUES: tl.constexpr,
    CHUNK: tl.constexpr,
    KEEP: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    offsets = chunk * CHUNK + tl.arange(0, CHUNK)
    valid = offsets < length
    lowest = tl.full([CHUNK], -2147483648, tl.int32).to(tl.int64) << 32
    if FROM_VALUES:
        x = tl.load(src_ptr + row * length + offsets, mask=valid, other=0.0)
        x = tl.where(x == 0.0, 0.0, x)  # -0.0 ties with +0.0
        bits = x.to(tl.int32, bitcast=True)
        ordered = bits ^ ((bits >> 31) & 0x7FFFFFFF)
        keys = (ordered.to(tl.int64) << 32) | offsets.to(tl.int64)
        keys = tl.where(valid, keys, lowest)
    else:
        keys = tl.load(src_ptr + row * length + offsets, mask=valid, other=lowest)
    best = tl.sort(keys, descending=True)
    slot = tl.arange(0, CHUNK)
    tl.store(dst_ptr + (row * chunks + chunk) * KEEP + slot, best, mask=slot < KEEP)


class ModelNew(nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        batch, length = x.shape
        keep = triton.next_power_of_2(self.k)
        chunk = max(2 * keep, 1024 if x.is_cuda else 16)  # the interpreter sorts slowly
        source, from_values = x, True
        while True:
            chunks = triton.cdiv(length, chunk)
            keys = torch.empty(batch, chunks * keep, dtype=torch.int64, device=x.device)
            chunk_topk_kernel[(batch, chunks)](
                source, keys, length, chunks, FROM_VALUES=from_values, CHUNK=chunk, KEEP=keep
            )
            source, from_values, length = keys, False, chunks * keep
            if chunks == 1:
                break
        indices = keys[:, : self.k] & 4294967295
        return x.gather(1, indices), indices
