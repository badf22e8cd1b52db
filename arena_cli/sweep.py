"""``arena sweep MATRIX.yaml``: every run of a matrix (harness x model x effort x problem x
repeat) through ``arena run``, a few at a time, resumable.

The matrix::

    agents:                       # each entry: a harness, its models, optionally its efforts
      - {harness: claude-code, models: [claude-sonnet-4-5, claude-opus-4-5]}
      - {harness: codex-cli, models: [gpt-5.5], efforts: [medium, high]}
    problems: [row_sum, softmax]
    repeats: 2
    budget: 45m
    concurrency: 2                # runs at once on this host (--concurrency overrides)
    gpus: [0, 1]                  # optional: runs take these in turn (each GPU's check lock)

The sweep folder holds one run folder per run (``<harness>__<model>__<effort>__<problem>__r<k>``)
and ``manifest.jsonl``: a line per finished run (its outcome, whether retryable, wall time). A
second call with the same folder runs only what the manifest lacks (with ``--retry-infra``, also
the runs that ended in a retryable outcome); a run folder left by a stopped sweep is moved aside
and its run starts again. Stopped by a signal, a sweep stops its running CLIs with their
process groups.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from arena_cli import launch


class MatrixError(ValueError):
    """The matrix file is not one a sweep can run; the message says what is wrong."""


@dataclass(frozen=True)
class Planned:
    harness: str
    model: str
    effort: str
    problem: str
    repeat: int

    @property
    def key(self) -> str:
        parts = (self.harness, self.model, self.effort or "default", self.problem)
        return "__".join(part.replace("/", "-") for part in parts) + f"__r{self.repeat}"


@dataclass
class Matrix:
    runs: list[Planned]
    budget_s: float
    concurrency: int
    gpus: list[str]


def read_matrix(path: Path) -> Matrix:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise MatrixError(f"{path}: {error}") from error
    if not isinstance(data, dict):
        raise MatrixError(f"{path}: a mapping with agents, problems and repeats is expected")
    agents, problems = data.get("agents"), data.get("problems")
    if not isinstance(agents, list) or not agents:
        raise MatrixError(f"{path}: agents must list {{harness, models}} entries")
    if not isinstance(problems, list) or not all(isinstance(p, str) for p in problems):
        raise MatrixError(f"{path}: problems must be a list of problem slugs")
    repeats = data.get("repeats", 1)
    if not isinstance(repeats, int) or repeats < 1:
        raise MatrixError(f"{path}: repeats must be a whole number of 1 or more")
    runs = []
    for entry in agents:
        for harness, model, effort in _agent_configurations(path, entry):
            runs += [
                Planned(harness, model, effort, problem, repeat)
                for problem in problems
                for repeat in range(1, repeats + 1)
            ]
    try:
        budget_s = launch.parse_budget(str(data.get("budget", "45m")))
    except ValueError as error:
        raise MatrixError(f"{path}: {error}") from error
    concurrency = data.get("concurrency", 1)
    if not isinstance(concurrency, int) or concurrency < 1:
        raise MatrixError(f"{path}: concurrency must be a whole number of 1 or more")
    gpus = [str(gpu) for gpu in data.get("gpus") or []]
    return Matrix(runs, budget_s, concurrency, gpus)


def _agent_configurations(path: Path, entry: Any) -> list[tuple[str, str, str]]:
    if not isinstance(entry, dict) or not isinstance(entry.get("harness"), str):
        raise MatrixError(f"{path}: each agents entry needs a harness: {entry!r}")
    harness, models = entry["harness"], entry.get("models")
    if harness not in launch.HARNESSES:
        known = ", ".join(launch.HARNESSES)
        raise MatrixError(f"{path}: unknown harness {harness!r} (known: {known})")
    if not isinstance(models, list) or not models or not all(isinstance(m, str) for m in models):
        raise MatrixError(f"{path}: {harness}: models must be a list of model names")
    efforts = entry.get("efforts") or [""]
    if not all(isinstance(e, str) for e in efforts):
        raise MatrixError(f"{path}: {harness}: efforts must be a list of names")
    return [(harness, model, effort) for model in models for effort in efforts]


def run_sweep(
    matrix: Matrix,
    out: Path,
    *,
    retry_infra: bool = False,
    concurrency: int | None = None,
    cli: dict[str, str] | None = None,
    say=print,
) -> dict[str, dict[str, Any]]:
    """Run what the manifest lacks; returns the manifest (key -> its last line)."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(out)
    pending = [run for run in matrix.runs if _wanted(manifest.get(run.key), retry_infra)]
    done = len(matrix.runs) - len(pending)
    say(f"sweep {out}: {len(matrix.runs)} run(s), {done} finished before, {len(pending)} to run")
    lock, counter = threading.Lock(), iter(range(1, len(pending) + 1))
    stopping = threading.Event()  # set when the sweep is told to stop: what ends then is not kept
    gpus = itertools.cycle(matrix.gpus) if matrix.gpus else None

    def one(run: Planned) -> None:
        folder = _fresh_folder(out / run.key)
        with lock:
            gpu = next(gpus) if gpus else None
        try:
            result = launch.run_agent(
                harness=run.harness,
                model=run.model,
                effort=run.effort,
                problem=run.problem,
                out=folder,
                budget_s=matrix.budget_s,
                cli=(cli or {}).get(run.harness),
                gpu=gpu,
            )
            line = {"outcome": result.outcome, "retryable": result.retryable}
            line |= {"wall_time_s": result.wall_time_s, "detail": result.detail}
        except launch.LaunchError as error:
            line = {"outcome": "harness_error", "retryable": False, "detail": str(error)}
        line = {"key": run.key, **run.__dict__, **line, "folder": folder.name}
        if stopping.is_set():
            return  # stopped with the sweep: no manifest line, so a resume runs it again
        with lock:
            _append(out / "manifest.jsonl", line)
            manifest[run.key] = line
            say(f"[{next(counter)}/{len(pending)}] {line['outcome']:<22} {run.key}")

    previous = signal.getsignal(signal.SIGTERM) if _main_thread() else None
    if _main_thread():
        signal.signal(signal.SIGTERM, _stop)
    pool = ThreadPoolExecutor(max_workers=concurrency or matrix.concurrency)
    try:
        list(pool.map(one, pending))
    except KeyboardInterrupt:
        stopping.set()
        pool.shutdown(wait=False, cancel_futures=True)
        launch.stop_all()
        raise
    finally:
        pool.shutdown(wait=True)
        if _main_thread():
            signal.signal(signal.SIGTERM, previous)
    return manifest


def _stop(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _wanted(line: dict[str, Any] | None, retry_infra: bool) -> bool:
    return line is None or (retry_infra and bool(line.get("retryable")))


def _fresh_folder(folder: Path) -> Path:
    """The run's folder, empty: one left by a stopped sweep, or a retried run's, moved aside."""
    if folder.exists():
        for number in range(1, 10_000):
            aside = folder.with_name(f"{folder.name}.earlier-{number}")
            if not aside.exists():
                folder.rename(aside)
                break
    return folder


def read_manifest(out: Path) -> dict[str, dict[str, Any]]:
    path = out / "manifest.jsonl"
    lines = path.read_text().splitlines() if path.is_file() else []
    manifest = {}
    for text in lines:
        try:
            line = json.loads(text)
        except ValueError:
            continue  # a line cut by a kill: its run goes again
        if isinstance(line, dict) and isinstance(line.get("key"), str):
            manifest[line["key"]] = line
    return manifest


def _append(path: Path, line: dict[str, Any]) -> None:
    with path.open("a") as file:
        file.write(json.dumps(line) + "\n")
        file.flush()
        os.fsync(file.fileno())


def summary(matrix: Matrix, manifest: dict[str, dict[str, Any]]) -> str:
    """Outcomes per agent configuration, one row each, and the runs not finished."""
    rows: dict[tuple[str, str, str], Counter] = {}
    for run in matrix.runs:
        line = manifest.get(run.key)
        outcome = line["outcome"] if line else "not run"
        rows.setdefault((run.harness, run.model, run.effort), Counter())[outcome] += 1
    outcomes = sorted({o for counts in rows.values() for o in counts}, key=_outcome_order)
    header = ["harness", "model", "effort", *outcomes]
    table = [header] + [
        [harness, model, effort or "-", *(str(counts.get(o, 0)) for o in outcomes)]
        for (harness, model, effort), counts in rows.items()
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in table)
    return "\n".join(line.rstrip() for line in lines)


def _outcome_order(outcome: str) -> tuple[int, str]:
    order = list(launch.OUTCOMES)
    return (order.index(outcome) if outcome in order else len(order), outcome)
