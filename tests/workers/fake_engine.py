"""A stand-in for ``python -m runners`` that misbehaves on request, for fault injection.

Directives in the solution text, one per line (``# fake: sleep=30``):
``sleep=N`` sleeps N seconds before answering, ``sleep_first=N`` only on its first start,
``crash`` exits 3 without a result, ``garble`` writes half a result, ``nan`` reports a NaN
error, ``kill_parent`` SIGKILLs the process that started it (the Celery pool child),
``verdict=V`` answers with that verdict, ``score=X`` with that score, ``unsandboxed`` reports
a grade made outside the sandbox, ``gpu=NAME`` one made on another GPU model (the real engine's
`environment.hardware`). Every start and finish is appended to the file named by FAKE_ENGINE_LOG
as ``start PID`` / ``done PID``.
"""

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

SHAPE_PARAMS = {"rows": 4, "cols": 33}
GPU = "fake-gpu"
TORCH = "0.0-fake"


def main() -> int:
    args = _parse()
    directives = _directives(Path(args.solution))
    _log(f"start {os.getpid()}")
    if args.progress:
        print("fake engine: started", file=sys.stderr, flush=True)
    first = _starts() == 1
    if "kill_parent" in directives:
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(30)
    if "crash" in directives:
        print("fake engine crashed on purpose", file=sys.stderr)
        return 3
    time.sleep(float(directives.get("sleep", 0)))
    if first:
        time.sleep(float(directives.get("sleep_first", 0)))
    baselines = json.loads(Path(args.baselines).read_text()) if args.baselines else {}
    text = json.dumps(_result(args, directives, baselines))
    Path(args.json).write_text(text[: len(text) // 2] if "garble" in directives else text)
    _log(f"done {os.getpid()}")
    return 0


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["evaluate"])
    parser.add_argument("--problem", required=True)
    parser.add_argument("--solution", required=True)
    parser.add_argument("--device", required=True)
    parser.add_argument("--json", required=True)
    parser.add_argument("--baselines")
    parser.add_argument("--progress", nargs="?", const="steps")
    return parser.parse_args()


def _directives(solution: Path) -> dict[str, str]:
    found = {}
    if solution.is_dir():  # a solution folder, as the real engine takes one
        solution = solution / "solution.py"
    text = solution.read_text() if solution.exists() else ""
    for line in text.splitlines():
        if line.startswith("# fake:"):
            key, _, value = line.removeprefix("# fake:").strip().partition("=")
            found[key] = value
    return found


def _result(args, directives: dict[str, str], baselines: dict) -> dict:
    verdict = directives.get("verdict", "ok")
    key = f"v1:cols=33,rows=4:{GPU}:{TORCH}:t2"
    cached = baselines.get(key)
    error = float("nan") if "nan" in directives else 0.0
    timing = {
        "median_us": 10.0,
        "mean_us": 10.5,
        "std_us": 0.5,
        "min_us": 9.5,
        "p10_us": 9.8,
        "p90_us": 11.0,
        "n": 100,
    }
    eager = cached["eager"] if cached else dict(timing, median_us=20.0)
    shape = {
        "set": "smoke",
        "index": 0,
        "params": SHAPE_PARAMS,
        "baseline_key": key,
        "correct": verdict == "ok",
        "max_abs_err": error,
        "time": timing,
        "baseline_eager": eager,
        "baseline_compile": None,
        "baseline_cached": bool(cached),
        "speedup_eager": eager["median_us"] / timing["median_us"],
    }
    return {
        "schema_version": 1,
        "engine_version": "fake-1",
        "problem": args.problem,
        "problem_version": "v1",
        "device": args.device,
        "verdict": verdict,
        "reason": "" if verdict == "ok" else f"fake {verdict}",
        "score": float(directives["score"]) if "score" in directives else None,
        "correct_visible": verdict == "ok",
        "correct_hidden": verdict == "ok",
        "shapes": [shape],
        "environment": {
            "hostname": "fake",
            "torch": TORCH,
            "hardware": directives.get("gpu", GPU) if args.device == "cuda" else "cpu",
        },
        "isolation": {"sandboxed": "unsandboxed" not in directives},
    }


def _log(line: str) -> None:
    if path := os.environ.get("FAKE_ENGINE_LOG"):
        with open(path, "a") as handle:
            handle.write(line + "\n")


def _starts() -> int:
    path = os.environ.get("FAKE_ENGINE_LOG")
    if not path or not os.path.exists(path):
        return 1
    return sum(line.startswith("start") for line in Path(path).read_text().splitlines())


if __name__ == "__main__":
    raise SystemExit(main())
