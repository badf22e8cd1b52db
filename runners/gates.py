"""The build and correctness gates, driving the reference and candidate processes.

`Grading` holds what every later gate shares (the shape plans and results, the run folder, the
two processes); `runners.performance` times and scores what these gates passed.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import torch

from runners import (
    build_cache,
    environment,
    hardware,
    processes,
    progress,
    reference_cache,
    sandbox,
    scoring,
    tensor_file,
    timing,
)
from runners.compare import Comparison, compare_call, release_device_memory
from runners.plan import ShapePlan, plan_shapes, shape_file
from runners.problem import STARTER_CATEGORIES, Problem
from runners.schema import (
    EvaluationResult,
    GateFailure,
    GateResult,
    ShapeResult,
    Verdict,
    baseline_key,
)
from runners.solution_files import read_solution
from runners.workers import Worker, WorkerDied, WorkerError, WorkerTimeout

PREPARE_TIMEOUT_S = 900.0
# A candidate's outputs file may hold this many times the expected outputs' bytes (8: a bool or
# fp8 output returned as int64 or float64) before it is refused unread.
OUTPUT_SLACK = 8


def _listed(value: Any) -> list:
    """A list from the candidate's reply, or nothing: its process writes the reply."""
    return value if isinstance(value, list) else []


class Grading:
    def __init__(
        self,
        problem: Problem,
        solution: Path,
        result: EvaluationResult,
        *,
        device: str,
        baselines: dict[str, Any],
        limits: sandbox.Limits,
        started: processes.Started,
    ):
        """`started`: the run folder and processes `runners.processes.start` made for this
        grade; they are this grading's to close from here on."""
        self.problem, self.solution, self.result = problem, solution, result
        self.device, self.cached, self.limits = device, baselines, limits
        self.folder = started.folder
        self._sandboxed = started.sandboxed
        self._graded_files = started.graded_files
        self.oracle: Worker | None = started.oracle
        self.candidate: Worker | None = started.candidate
        self._candidate_command = started.candidate_command
        result.isolation = started.isolation
        self.visible, self.hidden = plan_shapes(problem, device)
        self.shapes = {plan.id: _shape_result(plan) for plan in self.visible + self.hidden}
        result.shapes = list(self.shapes.values())
        result.environment.update(environment.describe(device))
        self.hardware = hardware.for_device(device, result.environment["gpu"] or "")
        result.environment["hardware"] = self.hardware.slug if self.hardware else None
        model = self.hardware.slug if self.hardware else (result.environment["gpu"] or "cpu")
        for shape in result.shapes:
            shape.baseline_key = baseline_key(
                problem.version, shape.params, model, torch.__version__, timing.PROTOCOL
            )
        self._spare: Worker | None = None  # the next candidate process, started ahead
        self._caching: threading.Thread | None = None  # the copy into the reference cache
        self.has_library = False  # whether reference.py has a Library line (the prepare reply)
        self._preload: tuple | None = None  # (ticket, plan) of a load the candidate is doing
        # The starter's check the reference process runs beside the correctness gates
        # ((ticket, plans) while outstanding), and its answers per shape or what stopped it.
        self._starter_check: tuple | None = None
        self._starter_answers: dict[str, bool] | GateFailure = {}

    # -- build ---------------------------------------------------------------------------
    def build(self, gate: GateResult) -> None:
        started = time.perf_counter()
        cached = self._prepare_references()
        self.result.cost["reference_s"] = round(time.perf_counter() - started, 3)
        plans = len(self.visible + self.hidden)
        gate.details["references_cached"] = f"{cached} of {plans}"
        progress.info(
            "reference inputs and outputs in %.1f s (%d of %d shapes from the cache)",
            self.result.cost["reference_s"],
            cached,
            plans,
        )
        restored = self._restore_builds()
        if restored:
            gate.details["builds_restored_bytes"] = restored
        reply = self._build_candidate(Verdict.BUILD_ERROR)
        gate.details["import_and_construct_s"] = round(reply["seconds"], 3)
        gate.reason = "imported, constructed and loaded the reference state_dict strictly"

    def _prepare_references(self) -> int:
        """Every shape's inputs and expected outputs in the run folder: copied from the worker's
        cache (runners.reference_cache) where it has them, else computed by the reference
        process and then cached. Runs before the candidate imports the solution, so what is
        cached is what the reference wrote. Returns how many shapes came from the cache."""
        plans = self.visible + self.hidden
        # Without a sandbox the candidate has the parent's uid and could write into the cache
        # itself, for every later grade: such a grade neither reads nor writes it.
        cache = None
        if self._sandboxed:
            cache = reference_cache.ReferenceCache.under(processes.cache_home())
        software = {
            key: self.result.environment.get(key) for key in ("gpu", "cpu", "torch", "cuda")
        }
        messages = [plan.message() for plan in plans]
        keys = reference_cache.keys(self.problem.version, messages, self.device, software)
        entries = dict(zip([plan.id for plan in plans], keys, strict=True))
        restored = cache.restore(entries, self.folder) if cache else set()
        missing = [plan for plan in plans if plan.id not in restored]
        message = {
            "op": "prepare",
            "problem_dir": str(self.problem.path),
            "device": self.device,
            "shapes": [plan.message() for plan in missing],
            "in_dir": str(self.folder.in_dir),
            "ref_dir": str(self.folder.ref_dir),
        }
        prepared = self.ask_reference(message, PREPARE_TIMEOUT_S)
        self.has_library = bool(prepared.get("library"))
        if cache and missing:
            self._store_references(cache, [(entries[plan.id], plan.id) for plan in missing])
        return len(restored)

    def _build_entry(self) -> tuple[build_cache.BuildCache, str] | None:
        """The worker's build cache and this solution's entry in it (runners.build_cache): only
        sandboxed grades use it, as they do the reference cache."""
        cache = build_cache.BuildCache.under(processes.cache_home()) if self._sandboxed else None
        if cache is None:
            return None
        keys = ("gpu", "driver", "torch", "cuda", "triton")
        software = {key: self.result.environment.get(key) for key in keys}
        entry = build_cache.key(self.problem.version, self._graded_files, self.device, software)
        return cache, entry

    def _restore_builds(self) -> int:
        """Put an earlier grade's builds of the same files in the candidate's folder, before it
        imports the solution; returns the bytes restored. A cache that fails is a miss."""
        try:
            found = self._build_entry()
            return found[0].restore(found[1], self.folder.cand, self.folder.uid) if found else 0
        except Exception as exc:  # the cache costs a grade time at worst, never its result
            progress.info("builds not restored: %r", exc)
            return 0

    def _store_builds(self) -> None:
        """Keep what the candidate built, once its processes have ended, after a grade that
        passed every gate: a grade that failed may have left a build half done (a process
        killed in the middle of it), and one that rewrote its files is forbidden."""
        scored = self.result.gate("score")  # the last gate: passed only where all did
        if scored is None or scored.status != "pass":
            return
        try:
            found = self._build_entry()
            if found is None:
                return
            cache, entry = found
            self.check_files_unchanged()
            graded = self._graded_files
            if cache.store(entry, self.folder.cand, graded=graded, uid=self.folder.uid):
                cache.trim()
        except Exception as exc:  # a cache that fails costs a later grade time, not this one
            progress.info("builds not kept: %r", exc)

    def _store_references(self, cache: reference_cache.ReferenceCache, shapes: list) -> None:
        """Copy what the reference process wrote into the cache, in the background while the
        correctness gates run (seconds for gigabytes: softmax's twelve shapes took 9 s on the
        H200 host), finished before the performance gate times anything (`finish_caching`).
        The sandboxed candidate cannot write in/ or ref/ meanwhile."""

        def store() -> None:
            try:
                for entry, shape_id in shapes:
                    cache.store(entry, self.folder, shape_id)
                cache.trim()  # once, after all of this grade's entries
            except Exception as exc:  # a cache that fails costs a later grade time, not this one
                progress.info("reference cache not written: %r", exc)

        self._caching = threading.Thread(target=store, name="reference-cache", daemon=True)
        self._caching.start()

    def finish_caching(self) -> None:
        """Wait for the copy into the reference cache, if one is under way."""
        if self._caching is not None:
            self._caching.join()
            self._caching = None

    def _start_candidate(self) -> None:
        self.candidate = self._new_candidate()

    def _new_candidate(self) -> Worker:
        return processes.new_candidate(self._candidate_command, self.folder, self.device)

    def prestart_candidate(self) -> None:
        """Start the process the next restart will use, while this one works: it starts the
        interpreter and imports torch and the harness (1.5 to 2.5 s on the H100 host, on the
        CPU, the GPU untouched) and then waits; the solution is imported in it only at the
        restart, after the files are checked."""
        if self._spare is None:
            self._spare = self._new_candidate()

    def restart_candidate(self) -> float:
        """End the candidate process and start a fresh one (the prestarted one where there is
        one), the solution imported and the first visible shape's model built in it; returns
        the seconds the new process took."""
        self.close_candidate()
        self.check_files_unchanged()
        started = time.perf_counter()
        spare, self._spare = self._spare, None
        if spare is not None and spare.proc.poll() is None:
            self.candidate = spare
        else:
            if spare is not None:
                spare.close()
            self._start_candidate()
        self._build_candidate(Verdict.RUNTIME_ERROR)
        return time.perf_counter() - started

    def check_files_unchanged(self) -> None:
        """The candidate owns its folder and may write there (build outputs), so it could also
        rewrite solution.py or a sidecar: a fresh process would then import code the static gate
        never read. Each restart first checks the files are the ones graded, and so does the
        end of the timing."""
        now = processes.file_digests(self.folder.cand, read_solution(self.solution))
        changed = [name for name, digest in self._graded_files.items() if now[name] != digest]
        if changed:
            raise GateFailure(
                Verdict.FORBIDDEN,
                f"the solution rewrote its own {changed[0]} while it was graded: a fresh process "
                "would import code the static gate did not read",
            )

    def _build_candidate(self, verdict: str) -> dict:
        """Import the solution in the candidate process and build the first visible shape's
        model; a failure is `verdict`."""
        message = {"op": "build", **self._model_files(self.visible[0])}
        return self.ask_candidate(message, self.limits.build_s, verdict, self.visible[0])

    def _model_files(self, plan: ShapePlan) -> dict[str, str]:
        return {
            "init": str(self.folder.in_dir / shape_file("init", plan.id)),
            "state": str(self.folder.in_dir / shape_file("state", plan.id)),
        }

    def call_files(self, plan: ShapePlan, out: Path) -> dict[str, str]:
        return {**self._model_files(plan), "out": str(out), "inputs": str(self.inputs_file(plan))}

    def inputs_file(self, plan: ShapePlan) -> Path:
        return self.folder.in_dir / shape_file("inputs", plan.id)

    # -- correctness ---------------------------------------------------------------------
    def correct_visible(self, gate: GateResult) -> None:
        self._correct(gate, self.visible, Verdict.INCORRECT)

    def correct_hidden(self, gate: GateResult) -> None:
        if not self.hidden:
            gate.status, gate.reason = "skip", "no held-out shape runs on this device"
            return
        self._correct(gate, self.hidden, Verdict.INCORRECT_HIDDEN)
        skipped = len(self.problem.hidden) - len(self.hidden)
        if skipped:
            gate.details["not_run_on_cpu"] = skipped

    def _correct(self, gate: GateResult, plans: list[ShapePlan], verdict: str) -> None:
        failed = []
        # Each shape is compared while the candidate runs the next: neither is timed.
        ticket = self._send_run(plans[0])
        for position, plan in enumerate(plans):
            reply = self.await_candidate(ticket, self.limits.step_s, Verdict.RUNTIME_ERROR, plan)
            if position + 1 < len(plans):
                ticket = self._send_run(plans[position + 1])
            out = self._out_file(plan)
            comparison = self.compare(plan, reply, out)
            out.unlink(missing_ok=True)
            release_device_memory(self.device)  # the candidate's outputs, loaded where saved
            self._record(plan, comparison)
            progress.info("compared %s: %s", plan.name, "match" if comparison.correct else "wrong")
            if reply.get("aliased") is True:  # one buffer returned by every call: said, allowed
                gate.details["aliased_outputs"] = True
            if not comparison.correct:
                failed.append(plan)
        gate.details["shapes"] = len(plans)
        gate.details["seeds_per_shape"] = len(plans[0].seeds) if plans else 0
        if failed:
            first = self.shapes[failed[0].id]
            detail = "" if failed[0].set == "hidden" else f": {first.error}"
            raise GateFailure(
                verdict,
                f"{len(failed)} of {len(plans)} shape(s) wrong; first {failed[0].label}{detail}",
            )
        gate.reason = f"{len(plans)} shape(s) x {gate.details['seeds_per_shape']} seeds match"

    def _out_file(self, plan: ShapePlan) -> Path:
        return self.folder.cand / f"out_{plan.id}.tensors"

    def _send_run(self, plan: ShapePlan) -> tuple:
        return self.send_candidate(
            {"op": "run", **self.call_files(plan, self._out_file(plan))}, plan
        )

    def compare(self, plan: ShapePlan, reply: dict, out: Path) -> Comparison:
        comparison = Comparison()
        for message in _listed(reply.get("type_errors")):
            comparison.fail(str(message)[:200])
        for index in _listed(reply.get("mutated")):
            comparison.fail(f"call {str(index)[:20]} modified its inputs")
        bound = self._outputs_bound(plan, len(plan.seeds))  # the engine's file: not in the try
        try:
            saved = tensor_file.load(out, self.device, untrusted=True, max_bytes=bound)
        except torch.OutOfMemoryError:  # the device is shared with the candidate: the engine's
            raise
        except Exception as exc:  # anything unreadable is the candidate's failure
            comparison.fail(f"outputs could not be read as plain tensors ({type(exc).__name__})")
            return comparison
        if not isinstance(saved, list):
            comparison.fail("outputs could not be read as a list of calls")
            return comparison
        if len(saved) != len(plan.seeds):
            comparison.fail(f"{len(saved)} result(s) for {len(plan.seeds)} calls")
            return comparison
        self._compare_sets(comparison, plan, saved)
        return comparison

    def tolerances(self, plan: ShapePlan) -> list[list[dict[str, Any]]]:
        """Per input set of the shape, per output in the order outputs come back: what every
        comparison holds them to, by the input set's distribution (runners.problem)."""
        return [self.problem.tolerance_for(distribution) for distribution in plan.dists]

    def _compare_sets(self, comparison: Comparison, plan: ShapePlan, saved: list) -> None:
        """Outputs for each of the shape's input sets against the expected ones. The input sets
        are read (a set at a time, on the CPU) only where an output is compared up to ties."""
        tolerances, expected = self.tolerances(plan), self._expected(plan)
        for index, outputs in enumerate(saved):
            inputs = self._input_set(plan, index) if self.problem.ties else None
            compare_call(comparison, expected[index], outputs, tolerances[index], inputs)

    def _input_set(self, plan: ShapePlan, index: int) -> list[Any]:
        return tensor_file.load(self.inputs_file(plan), "cpu", select=[index])[index]

    def _outputs_bound(self, plan: ShapePlan, calls: int) -> int:
        """The most bytes a candidate's file of `calls` calls' outputs may hold before it is
        read: OUTPUT_SLACK times the expected outputs' (an output of a wider dtype still reads,
        and fails its comparison by name) and 64 MiB. A forged file naming more would have the
        reading process allocate it."""
        per_call = tensor_file.data_bytes(self._expected_file(plan)) / len(plan.seeds)
        return int(OUTPUT_SLACK * per_call * calls) + (64 << 20)

    def recheck_timed(self, plan: ShapePlan, reply: dict, out: Path, seed: int) -> Comparison:
        """The kept timed calls' outputs against the reference's outputs for the same varied
        inputs. The reference process reads the candidate's file `out`, rebuilds those inputs
        from the round's seed and compares on the device: the outputs, gigabytes for large
        shapes, are read once rather than saved and loaded again."""
        message = {
            "op": "recheck",
            "shape": plan.message(),
            "device": self.device,
            "inputs": str(self.inputs_file(plan)),
            "seed": seed,
            "kept": str(out),
            "max_bytes": self._outputs_bound(plan, timing.KEPT_CALLS),
            "tolerances": self.tolerances(plan),
        }
        checked = self.ask_reference(message, PREPARE_TIMEOUT_S)["comparison"]
        comparison = Comparison.from_dict(checked)
        type_errors = [str(error)[:200] for error in _listed(reply.get("type_errors"))]
        if type_errors:  # named first, before what the comparison found
            comparison.correct = False
            comparison.errors[:0] = type_errors
        if plan.set == "hidden":  # the reason names the errors: no held-out sizes in them
            comparison.errors = [_without_sizes(error) for error in comparison.errors]
        return comparison

    # -- the starter (kernel-to-kernel problems) ------------------------------------------
    def start_starter_check(self) -> None:
        """Send the reference process the starter's check of each held-out shape the cache does
        not answer, to run while the correctness gates run (nothing is timed there: only the
        device is shared); `compare_with_starter` takes the answer."""
        if self.problem.category not in STARTER_CATEGORIES:
            return
        plans = [plan for plan in self.hidden if self._cached_starter(plan) is None]
        if not plans:
            return
        shapes = [
            {
                "shape": plan.message(),
                "inputs": str(self.inputs_file(plan)),
                "expected": str(self._expected_file(plan)),
                "tolerances": self.tolerances(plan),
            }
            for plan in plans
        ]
        message = {"op": "starter_check", "device": self.device, "shapes": shapes}
        try:
            self._starter_check = (self.oracle.send(message), plans)
        except WorkerError as exc:  # said where the check's answer is taken
            self._starter_answers = self._reference_failure(exc)

    def compare_with_starter(self) -> None:
        """Whether the starter is right on each held-out shape run here, and the run's quadrant
        against it (`result.starter`). Called once the held-out gate ran, passed or not: a run
        failing held-out shapes the starter gets right is the regression this measures. The
        starter's correctness comes from the cache (`starter_correct`, per problem version and
        shape) where it is there; a held-out shape the run never reached counts as wrong."""
        if self.problem.category not in STARTER_CATEGORIES:
            return
        started = time.perf_counter()
        try:
            self._collect_starter_check()
        finally:  # what the grade waited for it, beyond the correctness gates
            self.result.cost["starter_check_s"] = round(time.perf_counter() - started, 3)
        if isinstance(self._starter_answers, GateFailure):  # the problem's starter is at fault
            self.result.gate("correct_hidden").details["starter_error"] = (
                self._starter_answers.reason
            )
            return
        for plan in self.hidden:
            cached = self._cached_starter(plan)
            answer = self._starter_answers.get(plan.id, False)  # a shape never checked: wrong
            self.shapes[plan.id].starter_correct = answer if cached is None else cached
        outcomes = [
            (self.shapes[p.id].correct is True, self.shapes[p.id].starter_correct)
            for p in self.hidden
        ]
        self.result.starter = scoring.starter_comparison(outcomes)

    def _cached_starter(self, plan: ShapePlan) -> bool | None:
        cached = (self.cached.get(self.shapes[plan.id].baseline_key) or {}).get("starter_correct")
        return None if cached is None else bool(cached)

    def _collect_starter_check(self) -> None:
        """Take the reference's answer to `start_starter_check`, if one is outstanding: per
        shape whether the starter is right (its outputs compared in the reference process,
        which runs it, as a candidate's are), or the failure that stopped the check."""
        if self._starter_check is None:
            return
        (ticket, plans), self._starter_check = self._starter_check, None
        try:
            reply = self._reference_reply(ticket, PREPARE_TIMEOUT_S * len(plans))
        except GateFailure as failure:
            self._starter_answers = failure
            return
        results = reply.get("results") or []
        for plan, answer in zip(plans, results, strict=True):
            if answer.get("starter_error"):
                error = answer["starter_error"]
                print(f"starter on {plan.label} ({plan.params}): {error}", file=sys.stderr)
            self._starter_answers[plan.id] = bool(answer.get("correct"))

    def _expected_file(self, plan: ShapePlan) -> Path:
        return self.folder.ref_dir / shape_file("expected", plan.id)

    def _expected(self, plan: ShapePlan) -> list[Any]:
        """Read for each comparison (once a grade): kept, every shape's would hold gigabytes of
        the device through the timing."""
        return tensor_file.load(self._expected_file(plan), self.device)

    def _record(self, plan: ShapePlan, comparison: Comparison) -> None:
        shape = self.shapes[plan.id]
        shape.correct = comparison.correct
        shape.max_abs_err, shape.max_rel_err = comparison.max_abs_err, comparison.max_rel_err
        shape.mismatches, shape.worst_index = comparison.mismatches, comparison.worst_index
        shape.error = comparison.error
        if plan.set == "hidden" and shape.error:
            shape.error = _without_sizes(shape.error)

    # -- processes -----------------------------------------------------------------------
    def ask_candidate(self, message: dict, timeout_s: float, verdict: str, plan: ShapePlan) -> dict:
        ticket = self.send_candidate(message, plan)
        return self.await_candidate(ticket, timeout_s, verdict, plan)

    def send_candidate(self, message: dict, plan: ShapePlan) -> tuple:
        """Send the candidate a request without waiting for it (`await_candidate` does)."""
        self._collect_preload()
        try:
            return self.candidate.send(message)
        except WorkerError as exc:
            raise _candidate_failure(exc, plan, 0.0) from None

    def await_candidate(
        self, ticket: tuple, timeout_s: float, verdict: str, plan: ShapePlan
    ) -> dict:
        try:
            reply = self.candidate.receive(ticket, timeout_s=timeout_s)
        except WorkerError as exc:
            raise _candidate_failure(exc, plan, timeout_s) from None
        if not reply.get("ok"):
            kind = reply.get("kind")
            verdict = Verdict.RESOURCE_LIMIT if kind == "resource" else verdict
            error = reply.get("error", "")
            if plan.set == "hidden":
                print(f"{plan.label} ({plan.params}): {error}", file=sys.stderr)  # staff log
                error = "details withheld for held-out cases"

            raise GateFailure(verdict, f"{plan.label}: {error}")
        if reply.get("timers_replaced"):
            raise GateFailure(
                Verdict.TIMING_REJECTED,
                "timing functions were replaced: " + ", ".join(map(str, reply["timers_replaced"])),
            )
        return reply

    def preload_candidate(self, plans: list[ShapePlan], busy_gap_s: float = 0.0) -> None:
        """Have the candidate process read `plans`' inputs onto the device, and their models'
        states, while the parent does other work (the last round's re-checks): a fresh process
        would otherwise read them shape by shape between its timings; with `busy_gap_s`, it
        keeps the device busy from then to its first timing (runners.timing.BusyDevice). Its
        reply is taken before the next request."""
        message = {
            "op": "load",
            "inputs": [str(self.inputs_file(plan)) for plan in plans],
            "states": [self._model_files(plan)["state"] for plan in plans],
            "busy_gap_s": busy_gap_s,
        }
        # A failure names a held-out shape where one is loaded, so its error stays withheld.
        named = next((plan for plan in plans if plan.set == "hidden"), plans[0])
        self._preload = (self.send_candidate(message, named), named)

    def _collect_preload(self) -> None:
        if self._preload is not None:
            (ticket, plan), self._preload = self._preload, None
            self.await_candidate(ticket, self.limits.step_s, Verdict.RUNTIME_ERROR, plan)

    def oracle_alive(self) -> bool:
        """Whether the reference process still runs (a request past its limit ends it)."""
        return self.oracle is not None and self.oracle.proc.poll() is None

    def ask_reference(self, message: dict, timeout_s: float) -> dict:
        self._collect_starter_check()  # its reply comes first
        try:
            ticket = self.oracle.send(message)
        except WorkerError as exc:
            raise self._reference_failure(exc) from None
        return self._reference_reply(ticket, timeout_s)

    def _reference_reply(self, ticket: tuple, timeout_s: float) -> dict:
        try:
            reply = self.oracle.receive(ticket, timeout_s=timeout_s)
        except WorkerError as exc:
            raise self._reference_failure(exc) from None
        if not reply.get("ok"):
            raise GateFailure(Verdict.INFRA_ERROR, f"reference process: {reply.get('error')}")
        return reply

    def _reference_failure(self, exc: WorkerError) -> GateFailure:
        tail = self.oracle.log_tail(600)
        return GateFailure(Verdict.INFRA_ERROR, f"reference process: {exc}: {tail}")

    def close_candidate(self) -> None:
        self._preload = None  # its reply goes with the process
        if self.candidate:
            self.candidate.close()
            self.candidate = None

    def close(self) -> None:
        try:
            self.close_candidate()
            if self._spare:
                self._spare.close()
                self._spare = None
            if self.oracle:
                self.oracle.close()
            self._store_builds()
        finally:
            try:
                self.finish_caching()  # before the run folder it copies from goes
            finally:
                if self.folder:
                    self.folder.remove()


def _shape_result(plan: ShapePlan) -> ShapeResult:
    return ShapeResult(set=plan.set, index=plan.index, params=dict(plan.params), case=plan.case)


def _candidate_failure(exc: WorkerError, plan: ShapePlan, timeout_s: float) -> GateFailure:
    if isinstance(exc, WorkerTimeout):
        return GateFailure(
            Verdict.TIMEOUT,
            f"{plan.label}: no answer within {timeout_s:.0f} s "
            "(wall clock); the process tree was killed",
        )
    if isinstance(exc, WorkerDied):
        return GateFailure(*_death_verdict(exc, plan))
    return GateFailure(Verdict.RUNTIME_ERROR, f"{plan.label}: {exc}")


def _death_verdict(died: WorkerDied, plan: ShapePlan) -> tuple[str, str]:
    if sandbox.init_failed(died.returncode):
        return Verdict.INFRA_ERROR, "the sandbox could not start"
    name = died.signal_name
    if name == "SIGXCPU":
        return Verdict.TIMEOUT, f"{plan.label}: CPU time limit exceeded"
    if name == "SIGXFSZ":
        return Verdict.RESOURCE_LIMIT, f"{plan.label}: file size limit exceeded"
    if name:
        return Verdict.CRASHED, f"{plan.label}: the process was killed by {name}"
    return Verdict.RUNTIME_ERROR, f"{plan.label}: the process exited (status {died.returncode})"


def _without_sizes(error: str) -> str:
    """A held-out shape's error with its parenthesised sizes removed."""
    return re.sub(r"\([^)]*\)", "(...)", error)
