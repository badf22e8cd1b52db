"""A peer's published agent runs graded by this engine, and where the two disagree.

The peer is KernelBench-Hard (a checkout of `Infatoshi/kernelbench.com`, or a folder of the same
layout): its H100 problems under `benchmarks/hard/problems-<gpu>/`, each run's final solution
under `public/runs/<gpu>/<run>_solution.py.txt` and the peer's verdict and per-shape figures under
`public/data/rundetail/<gpu>/<run>.json`. This script fetches nothing.

    python bench/peer_runs.py timing --checkout PEER --problem 03_paged_attention --out F.jsonl
        each published-correct solution of a problem timed four ways on one input per shape:
        do_bench, the engine's loop as it grades, the loop without its hold, do_bench over two
        input copies (what a solution keyed on input addresses pays for new inputs)

Results are JSON lines appended to --out; a run already there is skipped (resumable).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIDECAR_MARK = "# ===== sidecar: "


# -- the peer's layout --------------------------------------------------------------------------
def problems_dir(checkout: Path, gpu: str) -> Path:
    return checkout / "benchmarks" / "hard" / f"problems-{gpu}"


def published_runs(checkout: Path, gpu: str) -> list[dict[str, Any]]:
    """Every run the peer publishes for `gpu` that has a solution, with its verdict record."""
    details = checkout / "public" / "data" / "rundetail" / gpu
    runs = []
    for path in sorted(details.glob("*.json")):
        record = json.loads(path.read_text())
        solution = checkout / "public" / "runs" / gpu / f"{record['run_id']}_solution.py.txt"
        if solution.is_file() and (problems_dir(checkout, gpu) / record["problem"]).is_dir():
            runs.append({**record, "solution_path": str(solution)})
    return runs


def python_part(text: str) -> str:
    """The solution's Python, without sidecar files the peer appends after a marker line."""
    index = text.find(SIDECAR_MARK)
    if index < 0:
        return text
    head = text[:index].rstrip()
    lines = head.splitlines()
    while lines and set(lines[-1].strip()) <= {"#", "="}:  # the frame above the marker
        lines.pop()
    return "\n".join(lines) + "\n"


def shapes_of(problem: Path) -> list[dict[str, int]]:
    return _import(problem / "shapes.py", "peer_shapes").SHAPES


def set_shape(reference: Any, shape: dict[str, int]) -> None:
    """Set the reference's module-level shape names, spelled as the shape's keys or upper-case."""
    for key, value in shape.items():
        name = key if hasattr(reference, key) else key.upper()
        if not hasattr(reference, name):
            raise KeyError(f"the reference has no shape name {key!r}")
        setattr(reference, name, value)


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# -- timing -------------------------------------------------------------------------------------
def command_timing(args: argparse.Namespace) -> None:
    import torch

    from runners import launches

    launches.install()  # as in the candidate process: the solution's Triton launches counted
    problem = problems_dir(args.checkout, args.gpu) / args.problem
    done = _done(args.out)
    runs = [r for r in published_runs(args.checkout, args.gpu) if r["problem"] == args.problem]
    for run in runs:
        if run["run_id"] in done or not run["correct"]:
            continue
        if args.runs and not any(key in run["run_id"] for key in args.runs):
            continue
        record = {"run_id": run["run_id"], "peer_ms": [s.get("ms") for s in run["shapes"]]}
        try:
            record["shapes"] = _time_run(problem, Path(run["solution_path"]), args)
        except Exception as exc:  # a solution that fails here is reported, not fatal
            record["error"] = f"{type(exc).__name__}: {exc}"[:500]
        torch.cuda.synchronize()
        _append(args.out, record)
        print(json.dumps(record)[:400], flush=True)


def _time_run(problem: Path, solution_path: Path, args: argparse.Namespace) -> list[dict]:
    import torch

    work = args.out.parent / "solutions" / solution_path.name.removesuffix(".txt")
    work.parent.mkdir(parents=True, exist_ok=True)
    work.write_text(python_part(solution_path.read_text()))
    reference = _import(problem / "reference.py", "reference")
    solution = _import(work, "solution")
    rows = []
    for index, shape in enumerate(shapes_of(problem)):
        set_shape(reference, shape)
        torch.manual_seed(42)
        init = list(reference.get_init_inputs())
        model = reference.Model(*init).cuda().eval()
        candidate = solution.Model(*init).cuda().eval()
        candidate.load_state_dict(model.state_dict(), strict=True)
        torch.manual_seed(42)
        inputs = [a.cuda() if isinstance(a, torch.Tensor) else a for a in reference.get_inputs()]
        rows.append({"shape": index, **_variants(candidate, inputs)})
        del model, candidate, inputs
        torch.cuda.empty_cache()
    return rows


def _variants(model: Any, inputs: list[Any]) -> dict[str, float]:
    import torch
    import triton.testing

    from runners import performance, timing

    def call(args: list[Any]) -> Any:
        return model(*args)

    with torch.no_grad():
        bench = triton.testing.do_bench(lambda: call(inputs), return_mode="median")
        copies = [inputs, timing.fresh_copy(inputs)]
        turn = iter(range(10**9))
        rotated = triton.testing.do_bench(
            lambda: call(copies[next(turn) % 2]), return_mode="median"
        )
    row = {"do_bench_us": bench * 1e3, "do_bench_two_copies_us": rotated * 1e3}
    for name, hold in (("engine", performance.HOLD_TIMEOUT_US), ("engine_no_hold", 0.0)):
        settings = timing.Settings(
            cap_s=1.0,
            flush_bytes=performance.FLUSH_MIN_BYTES,
            spread_bytes=performance.SPREAD_BYTES,
            hold_timeout_us=hold,
            vary_seed=7,
        )
        samples = timing.measure(call, [inputs], device="cuda", settings=settings)
        row[f"{name}_us"] = statistics.median(samples.event_ms) * 1e3
        row[f"{name}_host_us"] = statistics.median(samples.host_ms) * 1e3
    return {key: round(value, 2) for key, value in row.items()}


# -- files --------------------------------------------------------------------------------------
def _done(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    return {json.loads(line)["run_id"] for line in path.read_text().splitlines() if line}


def _append(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as file:
        file.write(json.dumps(record) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    timing_parser = commands.add_parser("timing", help="one problem's runs timed four ways")
    timing_parser.add_argument("--checkout", type=Path, required=True)
    timing_parser.add_argument("--gpu", default="h100")
    timing_parser.add_argument("--problem", required=True)
    timing_parser.add_argument("--runs", nargs="*", default=[], help="run id substrings")
    timing_parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    started = time.perf_counter()
    {"timing": command_timing}[args.command](args)
    print(f"done in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
