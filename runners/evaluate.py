"""Grading one solution: the gates in order, each ending in a verdict with a reason."""

from __future__ import annotations

import time
import traceback
from pathlib import Path
from typing import Any

from runners import ENGINE_VERSION, processes, progress, sandbox
from runners.problem import Problem, ProblemError, load_problem
from runners.schema import GATE_NAMES, EvaluationResult, GateFailure, GateResult, Verdict
from runners.solution_files import SolutionFiles, SolutionFilesError, read_solution
from runners.static_check import check_native_file, check_source

MAX_SOLUTION_BYTES = 256 * 1024


def evaluate(
    problem_ref: str | Path,
    solution: Path,
    *,
    device: str = "cuda",
    baselines: dict[str, Any] | None = None,
    limits: sandbox.Limits | None = None,
    static: bool = True,
) -> EvaluationResult:
    """Grade `solution`; raises ProblemError for a bad problem, otherwise returns a result.

    `static=False` lets the engine's own tests send rule-breaking solutions to the runtime
    checks, which must hold on their own.
    """
    problem = load_problem(problem_ref)
    if device == "cpu" and not problem.cpu_capable:
        raise ProblemError(gpu_only_message(problem))
    result = EvaluationResult(
        problem=problem.slug,
        problem_version=problem.version,
        device=device,
        verdict=Verdict.OK,
        engine_version=ENGINE_VERSION,
        timings_comparable=device == "cuda",
    )
    started = time.perf_counter()
    try:
        _grade(problem, Path(solution), result, device, baselines or {}, limits, static)
    except Exception as exc:  # the grader's own failure is a result, not a crash
        _fail(result, Verdict.INFRA_ERROR, f"engine error: {exc!r}")
        result.environment["traceback"] = traceback.format_exc(limit=8)
    result.cost["total_s"] = round(time.perf_counter() - started, 3)
    _finish(result)
    return result


def _grade(
    problem: Problem,
    solution: Path,
    result: EvaluationResult,
    device: str,
    baselines: dict[str, Any],
    limits: sandbox.Limits | None,
    static: bool,
) -> None:
    try:
        files = read_solution(solution)
    except SolutionFilesError as error:
        _refuse_files(result, error)
        return
    if not static:
        result.gates.append(GateResult(name="static", status="skip", reason="disabled by caller"))
    elif not _run_gate(result, "static", lambda gate: _static_files(problem, files, gate)):
        _skip_from(result, "build")
        return
    limits = limits or sandbox.Limits()
    # The children start before the parent imports torch (runners.processes): the gates' modules
    # import it, and the grading sets up the device.
    started = processes.start(problem, solution, device, limits)
    grading = None
    try:
        from runners.gates import Grading
        from runners.performance import Performance

        grading = Grading(
            problem,
            solution,
            result,
            device=device,
            baselines=baselines,
            limits=limits,
            started=started,
        )
        performance = Performance(grading)
        steps = {
            "build": grading.build,
            "correct_visible": grading.correct_visible,
            "correct_hidden": grading.correct_hidden,
            "performance": performance.performance,
            "score": performance.score,
        }
        for name, step in steps.items():
            passed = _run_gate(result, name, step)
            if name == "build" and passed:
                grading.start_starter_check()  # runs beside the correctness gates
            if name == "correct_hidden":
                grading.compare_with_starter()  # after a failure too: that is the regression case
            if not passed:
                _skip_from(result, _next_gate(name))
                return
    finally:
        (grading or started).close()


def _refuse_files(result: EvaluationResult, error: SolutionFilesError) -> None:
    """A missing solution.py skips every gate; a folder that breaks a file rule fails the static
    gate, also when the caller turned the static rules off: its files are never copied."""
    if error.verdict == Verdict.MISSING_SOLUTION:
        _fail(result, error.verdict, error.reason)
        _skip_from(result, "static")
        return

    def refuse(gate: GateResult) -> None:
        raise GateFailure(error.verdict, error.reason, {"file": error.name})

    _run_gate(result, "static", refuse)
    _skip_from(result, "build")


def _static_files(problem: Problem, files: SolutionFiles, gate: GateResult) -> None:
    """The static rules over solution.py, then the native-source rules over each sidecar; a
    sidecar's hits and flags carry its name."""
    _static(problem, files.source, gate)
    flags = gate.details.setdefault("flags", [])
    for name, text in files.sidecar_texts.items():
        report = check_native_file(text)
        gate.details["hits"] += [{"file": name, **hit.to_dict()} for hit in report.hits]
        flags += [{"file": name, **flag.to_dict()} for flag in report.flags]
        if not report.ok:
            raise GateFailure(report.verdict, f"{name} {report.reason}")
    if files.sidecars:
        gate.reason += f"; {len(files.sidecars)} native source(s) beside it checked"
        flagged = sorted({f"{f['rule']} in {f['file']}" for f in flags if "file" in f})
        if flagged:
            gate.reason += f", flagged and graded: {', '.join(flagged)}"


def gpu_only_message(problem: Problem) -> str:
    """Why a problem without smoke shapes cannot be graded on the CPU."""
    why = "it has no smoke shapes for the CPU"
    if problem.category == "cuda-to-cuda":
        why = "its CUDA kernels build with nvcc and run on a GPU only, so it has no smoke shapes"
    return f"{problem.slug} is GPU-only: {why}; it grades on CUDA only (--device cuda)"


def _static(problem: Problem, solution: Path, gate: GateResult) -> None:
    report = check_source(
        solution.read_bytes(),
        forbidden=problem.forbidden,
        max_bytes=MAX_SOLUTION_BYTES,
        category=problem.category,
    )
    # hits refuse; flags are idioms graded anyway, each naming the runtime check that covers it.
    gate.details["hits"] = [hit.to_dict() for hit in report.hits]
    gate.details["flags"] = [hit.to_dict() for hit in report.flags]
    if not report.ok:
        raise GateFailure(report.verdict, report.reason)
    gate.reason = "no static rule hit"
    if report.flags:
        rules = ", ".join(sorted({hit.rule for hit in report.flags}))
        gate.reason = f"no refusing rule hit; flagged and graded with runtime checks: {rules}"


def _run_gate(result: EvaluationResult, name: str, step) -> bool:
    gate = GateResult(name=name, status="pass")
    started = time.perf_counter()
    progress.info("gate %s: started", name)
    try:
        step(gate)
    except GateFailure as failure:
        gate.status, gate.verdict, gate.reason = "fail", failure.verdict, failure.reason
        gate.details.update(failure.details)
    gate.duration_s = round(time.perf_counter() - started, 3)
    progress.info("gate %s: %s in %.1f s", name, gate.status, gate.duration_s)
    result.gates.append(gate)
    result.cost[f"{name}_s"] = gate.duration_s
    if gate.status == "fail":
        _fail(result, gate.verdict, f"{name}: {gate.reason}")
    return gate.status != "fail"


def _fail(result: EvaluationResult, verdict: str, reason: str) -> None:
    if result.verdict == Verdict.OK:
        result.verdict, result.reason = verdict, reason


def _next_gate(name: str) -> str | None:
    index = GATE_NAMES.index(name) + 1
    return GATE_NAMES[index] if index < len(GATE_NAMES) else None


def _skip_from(result: EvaluationResult, name: str | None) -> None:
    if name is None:
        return
    for gate_name in GATE_NAMES[GATE_NAMES.index(name) :]:
        result.gates.append(
            GateResult(name=gate_name, status="skip", reason="an earlier gate failed")
        )


def _finish(result: EvaluationResult) -> None:
    passed = {g.name for g in result.gates if g.status == "pass"}
    result.correct_visible = "correct_visible" in passed
    result.correct_hidden = "correct_hidden" in passed
    if result.verdict != Verdict.OK:
        result.score = 0.0
        result.hidden_score = 0.0
    elif result.device == "cpu":
        result.reason = result.reason or "all gates passed (CPU: timings not comparable)"
    else:
        result.reason = result.reason or "all gates passed"
