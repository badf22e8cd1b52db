"""What moving a grade's outputs between processes costs: torch.save and torch.load against
runners.tensor_file (its reads on its threads, and on one), for two tensors of --gib GiB each
(a shape's two kept timed calls).

    python bench/transport.py                      # CUDA, 2 x 1 GiB, files in /dev/shm
    python bench/transport.py --device cpu --gib 0.25

Each step is timed three times in this process and its median printed (docs/benchmarks.md, "Cost
of a grade", Session 47); --json writes them too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runners import tensor_file  # noqa: E402  (after the path)
from runners.compare import Comparison, compare_call, save_without_checksums  # noqa: E402
from runners.plan import SHARED_MEMORY  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--gib", type=float, default=1.0, help="each tensor's size (default 1)")
    # Where the engine's run folders live (runners.plan.SHARED_MEMORY): mkdtemp makes a private one.
    parser.add_argument("--dir", type=Path, default=Path(SHARED_MEMORY))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    save_without_checksums()  # as the engine's processes save
    count = int(args.gib * 2**30) // 4
    first = torch.randn(count, device=args.device)
    second = torch.randn(count, device=args.device)
    kept = [(0, 1, [first]), (1, 2, [second])]
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        archive, raw = Path(scratch) / "kept.pt", Path(scratch) / "kept.tensors"
        steps: list[tuple[str, Callable[[], object]]] = [
            ("torch.save", lambda: torch.save(kept, archive)),
            ("copy to fresh pageable memory", lambda: (first.cpu(), second.cpu())),
            ("torch.load (read whole)", lambda: torch.load(archive, map_location=args.device)),
            ("torch.load (mmap)", lambda: torch.load(archive, map_location=args.device, mmap=True)),
            ("tensor_file.save", lambda: tensor_file.save(kept, raw)),
            ("tensor_file.save, a new file", lambda: _save_new(kept, raw)),
            ("tensor_file.load", lambda: tensor_file.load(raw, args.device, untrusted=True)),
            (
                "tensor_file.load, one of two",
                lambda: tensor_file.load(raw, args.device, select=[1]),
            ),
            (
                "tensor_file.load, one thread",
                lambda: _one_thread(tensor_file.load, raw, args.device, untrusted=True),
            ),
            ("compare one tensor (runners.compare)", lambda: _compare(first)),
        ]
        for name, step in steps:
            figures[name] = _median_s(step, args.device)
            print(f"{name:40} {figures[name]:8.3f} s", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"device": _device_name(args.device), **figures}, indent=1))


def _save_new(value: object, path: Path) -> None:
    """As the candidate writes each timing's kept outputs: a new file, its pages allocated."""
    path.unlink(missing_ok=True)
    tensor_file.save(value, path)


def _one_thread(step: Callable[..., object], *args: object, **kwargs: object) -> object:
    """`step` with tensor_file's chunks read one at a time (as before session 49)."""
    threads = tensor_file.IO_THREADS
    tensor_file.IO_THREADS = 1
    pool, tensor_file._pool = tensor_file._pool, None
    try:
        return step(*args, **kwargs)
    finally:
        if tensor_file._pool is not None:
            tensor_file._pool.shutdown()
        tensor_file.IO_THREADS, tensor_file._pool = threads, pool


def _compare(tensor: torch.Tensor) -> Comparison:
    comparison = Comparison()
    compare_call(comparison, [tensor], [tensor.clone()], [{"atol": 1e-5, "rtol": 1e-5}])
    return comparison


def _median_s(step: Callable[[], object], device: str) -> float:
    times = []
    for _ in range(3):
        _synchronize(device)
        started = time.perf_counter()
        step()
        _synchronize(device)
        times.append(time.perf_counter() - started)
    return round(statistics.median(times), 3)


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _device_name(device: str) -> str:
    return torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"


if __name__ == "__main__":
    main()
