"""Runs the engine (``python -m runners evaluate``) out of process for one evaluation.

A failing candidate is a result like any other; only the engine's own failure (it crashed, was
killed, or wrote no JSON) raises EngineFailure, which the caller may retry.
"""

import ctypes
import json
import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from django.conf import settings
from django.db import transaction

from runners.contract import (
    BASELINE_KINDS,
    SOLUTION_NAME,
    BaselineKey,
    EvaluationResult,
    ShapeResult,
    Verdict,
    parse_baseline_key,
    write_solution_folder,
)
from submissions.models import BaselineTiming, Evaluation, HardwareTarget

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_STDERR_TAIL = 2000


class EngineFailure(Exception):
    """The engine produced no result: an infrastructure failure, not the candidate's."""


class LeaseLost(Exception):
    """The evaluation's claim lapsed while the engine ran; another attempt owns it now."""


def grade(*, evaluation: Evaluation, on_tick: Callable[[], bool]) -> EvaluationResult:
    """Grade the evaluation's code (a lineage version's, else the run's upload) on its hardware;
    store baselines measured on the way."""
    run = evaluation.run
    code = evaluation.solution or run.solution
    # CPU timings depend on the machine and its load: the engine measures them every time.
    on_cpu = evaluation.hardware.device == HardwareTarget.Device.CPU
    result = run_engine(
        problem=run.problem.slug,
        solution=code.code if code else None,
        sidecars={s.name: s.code for s in code.sidecar_files} if code else {},
        device=evaluation.hardware.device,
        baselines={} if on_cpu else cached_baselines(problem_version=run.problem.version),
        on_tick=on_tick,
        log=_log_path(evaluation),
    )
    store_baselines(result)
    return result


def run_engine(
    *,
    problem: str,
    solution: str | None,
    device: str,
    baselines: dict,
    on_tick: Callable[[], bool],
    sidecars: Mapping[str, str] | None = None,
    log: Path | None = None,
) -> EvaluationResult:
    """Grade `solution` in a fresh engine process. With `log`, the engine says each step of the
    grade there as it ends (`--progress`), and leaves its stderr in it."""
    with tempfile.TemporaryDirectory(prefix="arena-eval-") as tmp:
        workdir = Path(tmp)
        solution_path = _write_solution(workdir, solution, sidecars or {})
        (workdir / "baselines.json").write_text(json.dumps(baselines), encoding="utf-8")
        out = workdir / "result.json"
        command = [
            *settings.ARENA_ENGINE_COMMAND,
            "evaluate",
            "--problem",
            problem,
            "--solution",
            str(solution_path),
            "--device",
            device,
            "--json",
            str(out),
            "--baselines",
            str(workdir / "baselines.json"),
            *(["--progress"] if log else []),
        ]
        returncode, stderr = _supervise(command, on_tick=on_tick, log=log)
        if returncode != 0 or not out.exists():
            raise EngineFailure(f"engine exited with status {returncode}: {stderr[-_STDERR_TAIL:]}")
        return _read_result(out)


def _write_solution(workdir: Path, solution: str | None, sidecars: Mapping[str, str]) -> Path:
    """What --solution names: solution.py alone, or the folder holding it and its sidecars (as
    uploaded, so solution.py finds them by name). Nothing is written for a missing solution:
    the engine reports it as missing_solution."""
    if solution is not None and sidecars:
        return write_solution_folder(workdir / "solution", solution, sidecars).parent
    if solution is not None:
        (workdir / SOLUTION_NAME).write_text(solution, encoding="utf-8")
    return workdir / SOLUTION_NAME


def _read_result(out: Path) -> EvaluationResult:
    try:
        result = EvaluationResult.from_dict(json.loads(out.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError) as exc:
        raise EngineFailure(f"engine wrote an unreadable result: {exc}") from exc
    if result.verdict == Verdict.INFRA_ERROR:
        raise EngineFailure(f"engine reported its own failure: {result.reason}")
    return result


def _log_path(evaluation: Evaluation) -> Path | None:
    """The staff log of this attempt at `evaluation`, where ARENA_ENGINE_LOG_DIR is set."""
    if not settings.ARENA_ENGINE_LOG_DIR:
        return None
    folder = Path(settings.ARENA_ENGINE_LOG_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"evaluation-{evaluation.pk}-attempt-{evaluation.attempts}.log"


def _supervise(
    command: list[str], *, on_tick: Callable[[], bool], log: Path | None = None
) -> tuple[int, str]:
    """Run the engine to completion, ticking every heartbeat; kill it on timeout or lost lease.
    Its stderr goes to `log` where given (read back for the tail), else to a scratch file."""
    deadline = time.monotonic() + settings.ARENA_EVAL_TIMEOUT_S
    with open(log, "w+b") if log else tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            command,
            cwd=settings.BASE_DIR,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        try:
            _wait(proc, deadline=deadline, on_tick=on_tick)
        finally:
            _kill_tree(proc)
        stderr.seek(0)
        return proc.returncode, stderr.read().decode("utf-8", "replace")


def _wait(proc: subprocess.Popen, *, deadline: float, on_tick: Callable[[], bool]) -> None:
    while True:
        try:
            proc.wait(timeout=min(settings.ARENA_EVAL_HEARTBEAT_S, deadline - time.monotonic()))
            return
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise EngineFailure(
                    f"engine ran past {settings.ARENA_EVAL_TIMEOUT_S}s and was killed"
                ) from None
            if not on_tick():
                raise LeaseLost("the evaluation's lease lapsed while the engine ran") from None


def _kill_tree(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _die_with_parent() -> None:
    # A SIGKILLed worker must not leave its engine holding the GPU.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def cached_baselines(*, problem_version: str) -> dict[str, dict]:
    """Reference timings for this problem version, keyed by baseline_key: each entry holds a
    TimingStats dict (or None) per ``BASELINE_KINDS`` and ``starter_correct``.

    The engine picks the keys of its own GPU model and torch version, which it alone knows.
    """
    rows = BaselineTiming.objects.filter(problem_version=problem_version)
    return {_key(row): _entry(row) for row in rows}


def _entry(row: BaselineTiming) -> dict:
    timings = {kind: getattr(row, kind) for kind in BASELINE_KINDS}
    return timings | {"starter_correct": row.starter_correct, "timed_out": row.timed_out}


def _key(row: BaselineTiming) -> str:
    return BaselineKey(
        row.problem_version, row.shape_key, row.gpu_model, row.torch_version, row.timing_protocol
    ).key


@transaction.atomic
def store_baselines(result: EvaluationResult) -> int:
    """Keep the reference timings this run measured on a GPU, so the next grading can skip
    them (the engine ignores cached CPU timings)."""
    if result.device == HardwareTarget.Device.CPU:
        return 0
    stored = 0
    for shape in result.shapes:
        measured = shape.baseline_eager is not None or shape.baseline_timed_out
        if shape.baseline_cached or not measured or not shape.baseline_key:
            continue
        key = parse_baseline_key(shape.baseline_key)
        if key is None:  # an engine of another version: its timings are not cached
            logger.warning("baseline key %r not understood; not cached", shape.baseline_key)
            continue
        BaselineTiming.objects.update_or_create(
            problem_version=key.problem_version,
            shape_key=key.shape,
            gpu_model=key.gpu,
            torch_version=key.torch_version,
            timing_protocol=key.protocol,
            defaults=_stored(shape),
        )
        stored += 1
    return stored


def _stored(shape: ShapeResult) -> dict:
    timings = {kind: _as_dict(getattr(shape, f"baseline_{kind}")) for kind in BASELINE_KINDS}
    timed_out = [kind for kind in shape.baseline_timed_out if kind in BASELINE_KINDS]
    return timings | {"starter_correct": shape.starter_correct, "timed_out": timed_out}


def _as_dict(stats) -> dict | None:
    return None if stats is None else stats.to_dict()
