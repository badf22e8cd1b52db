"""Tensors between the engine's processes: raw bytes behind a JSON header, nothing pickled.

Inputs, expected outputs and every output the candidate hands back cross between the engine's
processes through files in shared memory, gigabytes a grade for the large shapes. torch.save
first copies a CUDA tensor into fresh pageable memory, and torch.load reads a file whole before
moving it: on an H200 host two 1 GiB outputs took 3.4 s to save and 2.0 s to load onto the GPU.
Here a tensor's bytes go in chunks of CHUNK_BYTES through a pinned buffer, read IO_THREADS
chunks at once: 0.6 s to save and 0.10 s to load them (docs/benchmarks.md, "Cost of a grade",
Sessions 47 and 49; `bench/transport.py`).

A file is MAGIC, the header's length (8 bytes, little-endian), the header, then each tensor's
bytes at an offset aligned to ALIGN past the header. The header is JSON:
``{"tree": value, "tensors": [{"dtype", "shape", "stride", "device", "offset", "nbytes"}]}``,
where a value is a JSON scalar, ``{"t": index}`` (a tensor), ``{"l": [...]}`` (a list),
``{"u": [...]}`` (a tuple) or ``{"d": [[key, value], ...]}`` (a dict of string keys).

A file the candidate wrote is read with `load(untrusted=True)`: opened without following links,
only if it is a regular file, its header bounded and every tensor's dtype, size and place
checked against the file (and the caller's `max_bytes`) before a byte is read. A tensor saved
on a GPU is restored on the grading's device; one saved on the CPU stays there (a CPU output in
a CUDA grading then fails its comparison).
"""

from __future__ import annotations

import json
import math
import os
import stat
import struct
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

MAGIC = b"ARENA-T1"
MAX_HEADER_BYTES = 1 << 20
ALIGN = 64
CHUNK_BYTES = 16 << 20
# Chunks read at once: each thread reads its chunk into its pinned buffer and copies it onto the
# device, so a file of gigabytes is read at several cores' pace (two 1 GiB tensors onto an H200:
# 0.10 s against 0.40 s on one thread). Writes are not: writes into one file of shared memory
# take its lock in turn, and eight threads wrote the same two tensors in 0.69 s against 0.58 s.
IO_THREADS = 8
# Every dtype torch has, but the quantized ones (their tensors are not plain bytes).
DTYPES = {
    name: dtype
    for name, dtype in vars(torch).items()
    if isinstance(dtype, torch.dtype)
    and str(dtype) == f"torch.{name}"
    and not name.startswith(("qint", "quint"))
}
# A dimension at most this, and at most MAX_DIMS of them: the sizes a header names stay exact
# integers, cheap to multiply.
MAX_DIMENSION = 1 << 62
MAX_DIMS = 64

# Each thread's pinned buffer, made at its first use: a buffer shared by threads that load at
# once (bench/deck_gpu.py grades four failing controls side by side in one process) mixes their
# chunks, and a right output read back wrong.
_local = threading.local()
_pool = ThreadPoolExecutor(IO_THREADS, thread_name_prefix="tensor-file")  # threads made on use


class UnreadableFile(ValueError):
    """A file that is not what `save` writes: malformed, truncated, or naming impossible sizes."""


def save(value: Any, path: Path | str) -> None:
    """Write `value` (tensors, scalars, strings, None, and lists, tuples and string-keyed dicts
    of them) to `path`. A file already there is written over in place and cut to its new
    length: its memory pages are reused (in /dev/shm a fresh 512 MiB file took 0.26 s to write
    on this 2-core VM, one written over 0.09 s), as each round's kept outputs are."""
    tensors: list[torch.Tensor] = []
    tree = _encode(value, tensors, {})
    entries, offset = [], 0
    for tensor in tensors:
        offset = _aligned(offset)
        entries.append(_entry(tensor, offset))
        offset += entries[-1]["nbytes"]
    header = json.dumps({"tree": tree, "tensors": entries}).encode()
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, 0o666), "wb", buffering=0) as handle:
        handle.write(MAGIC + struct.pack("<Q", len(header)) + header)
        start = _aligned(len(MAGIC) + 8 + len(header))
        handle.truncate(start + offset)  # a last empty tensor still ends the file there
        for tensor, entry in zip(tensors, entries, strict=True):
            # one chunk at a time: writes into a file take its lock in turn (IO_THREADS)
            for part, at in _chunks(_memory(tensor), start + entry["offset"]):
                _write_chunk(handle.fileno(), part, at)


def load(
    path: Path | str,
    device: str,
    *,
    untrusted: bool = False,
    select: Iterable[int] | None = None,
    max_bytes: int | None = None,
) -> Any:
    """The value saved at `path`, its GPU tensors on `device`. With `select`, the value must be
    a list and only those items are read (the others are None). `untrusted`: the candidate
    wrote it; anything malformed raises UnreadableFile (or OSError opening it). `max_bytes`:
    a file whose tensors hold more, counting every element (a broadcast tensor's too: reading it
    costs little, using it costs all of them), is refused before any is read; a sparse file of
    gigabytes is cheap to make, so its size alone bounds nothing."""
    flags = os.O_RDONLY | (os.O_NOFOLLOW | os.O_NONBLOCK if untrusted else 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("not a regular file")
        reader = _Reader(handle, info.st_size, device)
        tree = reader.header()
        if max_bytes is not None and reader.data_bytes > max_bytes:
            raise UnreadableFile(f"tensors of {reader.data_bytes} bytes, over {max_bytes}")
        if select is not None:
            if not isinstance(tree, dict) or not isinstance(tree.get("l"), list):
                raise UnreadableFile("items selected from a value that is not a list")
            wanted = set(select)
            items = enumerate(tree["l"])
            return [reader.decode(item) if i in wanted else None for i, item in items]
        return reader.decode(tree)


def data_bytes(path: Path | str) -> int:
    """What the tensors of a file the engine wrote hold, every element counted (as `max_bytes`
    counts them), read from its header alone."""
    with open(path, "rb", buffering=0) as handle:
        reader = _Reader(handle, os.fstat(handle.fileno()).st_size, "cpu")
        reader.header()
        return reader.data_bytes


def _encode(value: Any, tensors: list[torch.Tensor], seen: dict[int, int]) -> Any:
    """The header's form of `value`; a tensor object met twice is written once (`seen`: its
    index by id), and read back as one object, as torch.save keeps it."""
    if isinstance(value, torch.Tensor):
        if id(value) not in seen:
            seen[id(value)] = len(tensors)
            tensors.append(value)
        return {"t": seen[id(value)]}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return {"l": [_encode(item, tensors, seen) for item in value]}
    if isinstance(value, tuple):
        return {"u": [_encode(item, tensors, seen) for item in value]}
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {"d": [[key, _encode(item, tensors, seen)] for key, item in value.items()]}
    raise TypeError(f"tensor_file cannot save a {type(value).__qualname__}")


def cannot_save(tensor: torch.Tensor) -> str | None:
    """Why `save` refuses the tensor (a phrase: "not a dense tensor"), or None."""
    if tensor.layout != torch.strided or tensor.is_nested or tensor.is_quantized:
        return "not a dense tensor"
    if str(tensor.dtype).removeprefix("torch.") not in DTYPES:
        return f"a {tensor.dtype} tensor, a dtype the engine does not read"
    return None


def _entry(tensor: torch.Tensor, offset: int) -> dict[str, Any]:
    problem = cannot_save(tensor)
    if problem:
        raise TypeError(f"tensor_file cannot save this tensor: it is {problem}")
    block = _block(tensor)
    return {
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "shape": list(tensor.shape),
        "stride": list(block.stride()),
        "device": "cpu" if tensor.device.type == "cpu" else "gpu",
        "offset": offset,
        "nbytes": _span(block.shape, block.stride()) * tensor.element_size(),
    }


def _block(tensor: torch.Tensor) -> torch.Tensor:
    """What is written for `tensor`: itself where its elements span no more memory than there
    are of them (any order of dimensions, broadcast dimensions kept), else a contiguous copy (a
    slice of a larger buffer is not written with the buffer). Conjugate and negative views are
    resolved first."""
    tensor = tensor.resolve_conj().resolve_neg()
    fits = min(tensor.stride(), default=0) >= 0
    if fits and _span(tensor.shape, tensor.stride()) <= tensor.numel():
        return tensor
    return tensor.contiguous()


def _span(shape: Sequence[int], stride: Sequence[int]) -> int:
    """Elements of memory from a tensor's first to its last (non-negative strides)."""
    if any(size == 0 for size in shape):
        return 0
    return 1 + sum((size - 1) * step for size, step in zip(shape, stride, strict=True))


def _memory(tensor: torch.Tensor) -> torch.Tensor:
    """The bytes `_entry` describes, in memory order, as a flat uint8 tensor where they live."""
    block = _block(tensor)
    span = _span(block.shape, block.stride())
    return block.as_strided((span,), (1,), block.storage_offset()).view(torch.uint8)


def _chunks(data: torch.Tensor, at: int) -> list[tuple[torch.Tensor, int]]:
    """`data` (flat bytes) in pieces of CHUNK_BYTES, each with its place in the file."""
    return [
        (data[start : start + CHUNK_BYTES], at + start)
        for start in range(0, data.numel(), CHUNK_BYTES)
    ]


def _each(work: Callable[[Any], None], items: list) -> None:
    """`work` on every item, IO_THREADS at once; the first failure is raised once all ended."""
    if len(items) <= 1:
        for item in items:
            work(item)
        return
    futures = [_pool.submit(work, item) for item in items]
    errors = [future.exception() for future in futures]
    failed = next((error for error in errors if error is not None), None)
    if failed is not None:
        raise failed


def _write_chunk(fd: int, part: torch.Tensor, at: int) -> None:
    if part.device.type == "cpu":
        view = memoryview(part.numpy())
    else:
        stage = _stage()[: part.numel()]
        stage.copy_(part)
        view = memoryview(stage.numpy())
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], at + done)


def _stage() -> torch.Tensor:
    """This thread's staging buffer: pinned, or pageable where pinning fails (a sandbox's
    locked-memory limit). Made outside inference mode, so copies outside it can use it."""
    stage = getattr(_local, "stage", None)
    if stage is None:
        with torch.inference_mode(False):
            try:
                stage = torch.empty(CHUNK_BYTES, dtype=torch.uint8, pin_memory=True)
            except RuntimeError:
                stage = torch.empty(CHUNK_BYTES, dtype=torch.uint8)
        _local.stage = stage
    return stage


def _aligned(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN


class _Reader:
    def __init__(self, handle: Any, size: int, device: str):
        self.handle, self.size, self.device = handle, size, device
        self.entries: list[dict[str, Any]] = []
        self.tensors: dict[int, torch.Tensor] = {}  # each read once, however often named
        self.start = 0
        self.data_bytes = 0

    def header(self) -> Any:
        head = self._read(len(MAGIC) + 8)
        if head[: len(MAGIC)] != MAGIC:
            raise UnreadableFile("not a tensor file")
        (length,) = struct.unpack("<Q", head[len(MAGIC) :])
        if length > MAX_HEADER_BYTES or len(head) + length > self.size:
            raise UnreadableFile(f"a header of {length} bytes")
        try:
            header = json.loads(self._read(length))
        except (ValueError, RecursionError) as exc:
            raise UnreadableFile(f"a malformed header ({type(exc).__name__})") from None
        if not isinstance(header, dict) or not isinstance(header.get("tensors"), list):
            raise UnreadableFile("a header without its list of tensors")
        self.start = _aligned(len(head) + length)
        self.entries = [self._checked(entry) for entry in header["tensors"]]
        self._check_apart()
        return header.get("tree")

    def _checked(self, entry: Any) -> dict[str, Any]:
        """The entry, if its dtype is known, its sizes plain and its bytes inside the file."""
        dtype = entry.get("dtype") if isinstance(entry, dict) else None
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise UnreadableFile("a tensor of an unknown dtype")
        shape, stride = entry.get("shape"), entry.get("stride")
        numbers = [entry.get("offset"), entry.get("nbytes")]
        plain = _counts(shape) and _counts(stride) and _counts(numbers)
        if not plain or len(shape) != len(stride) or entry.get("device") not in ("cpu", "gpu"):
            raise UnreadableFile("a tensor with a malformed shape, stride, place or device")
        too_large = any(value > MAX_DIMENSION for value in [*shape, *stride, *numbers])
        if too_large or len(shape) > MAX_DIMS:
            raise UnreadableFile("a tensor with sizes out of range")
        offset, nbytes = numbers
        span, elements = _span(shape, stride), math.prod(shape)
        if nbytes != span * DTYPES[dtype].itemsize or span > max(elements, 1):
            raise UnreadableFile("a tensor whose bytes do not match its shape and strides")
        if self.start + offset + nbytes > self.size:
            raise UnreadableFile("a tensor past the end of the file")
        return {**entry, "dtype": DTYPES[dtype], "elements": elements}

    def _check_apart(self) -> None:
        """No two tensors' bytes overlap: what is read never exceeds the file."""
        end = 0
        for entry in sorted(self.entries, key=lambda e: e["offset"]):
            if entry["nbytes"] and entry["offset"] < end:
                raise UnreadableFile("tensors whose bytes overlap")
            end = max(end, entry["offset"] + entry["nbytes"])
        self.data_bytes = sum(e["elements"] * e["dtype"].itemsize for e in self.entries)

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, bool | int | float | str):
            return node
        if isinstance(node, dict) and len(node) == 1:
            ((kind, body),) = node.items()
            if kind == "t" and isinstance(body, int) and 0 <= body < len(self.entries):
                if body not in self.tensors:
                    self.tensors[body] = self._tensor(self.entries[body])
                return self.tensors[body]
            if kind in ("l", "u") and isinstance(body, list):
                items = [self.decode(item) for item in body]
                return items if kind == "l" else tuple(items)
            if kind == "d" and isinstance(body, list):
                pairs = [pair for pair in body if isinstance(pair, list) and len(pair) == 2]
                if len(pairs) == len(body) and all(isinstance(k, str) for k, _ in pairs):
                    return {key: self.decode(value) for key, value in pairs}
        raise UnreadableFile("a malformed value in the header")

    def _tensor(self, entry: dict[str, Any]) -> torch.Tensor:
        device = "cpu" if entry["device"] == "cpu" else self.device
        dtype, shape, stride = entry["dtype"], entry["shape"], entry["stride"]
        if not entry["nbytes"]:
            return torch.empty_strided(shape, stride, dtype=dtype, device=device)
        raw = torch.empty(entry["nbytes"], dtype=torch.uint8, device=device)
        _each(lambda chunk: self._read_chunk(*chunk), _chunks(raw, self.start + entry["offset"]))
        return raw.view(dtype).as_strided(shape, stride)

    def _read_chunk(self, part: torch.Tensor, at: int) -> None:
        if part.device.type == "cpu":
            self._read_into(memoryview(part.numpy()), at)
            return
        stage = _stage()[: part.numel()]
        self._read_into(memoryview(stage.numpy()), at)
        part.copy_(stage)

    def _read(self, count: int) -> bytes:
        data = self.handle.read(count)
        if len(data) != count:
            raise UnreadableFile("the file ended early")
        return data

    def _read_into(self, view: memoryview, at: int) -> None:
        done = 0
        while done < len(view):
            got = os.preadv(self.handle.fileno(), [view[done:]], at + done)
            if not got:
                raise UnreadableFile("the file ended early")
            done += got


def _counts(values: Any) -> bool:
    return isinstance(values, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values
    )
