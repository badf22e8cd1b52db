"""The performance and score gates: the candidate's timing, the reference baselines, the roofline.

They run after the correctness gates of `runners.gates`, through the same `Grading` (its shape
results, run folder and processes).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any

from runners import environment, hardware, scoring
from runners.gates import GateFailure, Grading
from runners.plan import ShapePlan
from runners.schema import GateResult, TimingStats, Verdict
from runners.timing import Settings, relative_standard_error

BASELINE_TIMEOUT_S = 600.0
DEFAULT_TIME_CAP_S = 2.0
# At least 2x L2, and never under do_bench's 256 MiB: zeroing it keeps the device busy (~85 us on
# an H100) while the host launches the timed call, so launch latency stays out of the window.
FLUSH_MIN_BYTES = 256 * 2**20
# Inputs and outputs of timed calls spread over this much memory (runners.timing.Settings).
SPREAD_BYTES = 2 * 2**30
# Each shape is timed in this many rounds, one after another over all shapes, each round with a
# share of the shape's time cap: a slow episode (late launches adding microseconds to every call
# for seconds, seen on the H100) falls in one round, whose median the median of medians ignores.
TIMING_ROUNDS = {"cuda": 3, "cpu": 1}
# Calls at least this long are timed in the first round only: a few microseconds are noise to
# them, and re-checking their large outputs every round would double the gate's cost.
ONE_ROUND_US = 200.0
# torch.compile on CPU needs a C++ toolchain and seconds per shape; the CPU target is never
# ranked, so its speedup is over eager only.
# "library" times reference.py's optional Library module (cuBLAS, SDPA, torch.topk...): the
# best library implementation, a reference line next to eager and compile.
BASELINES = {"cuda": ("eager", "compile", "library"), "cpu": ("eager",)}
CPU_SETTINGS = Settings(warmup=1, min_samples=3, max_samples=20, cap_s=0.5)


def _settled_in_one_round(first_round_ms: list[float], settings: Settings) -> bool:
    """A call of ONE_ROUND_US or more whose first round reached the error target is not timed
    again; shorter calls, and long ones still noisy, get every round."""
    median_us = statistics.median(first_round_ms) * 1e3
    rse = relative_standard_error(first_round_ms)
    return median_us >= ONE_ROUND_US and rse < settings.rse_target


class Performance:
    def __init__(self, grading: Grading):
        self.grading = grading
        self.problem, self.device = grading.problem, grading.device
        self.hardware, self.shapes = grading.hardware, grading.shapes
        # On CPU the held-out shape only proves correctness: the interpreter is too slow to time it.
        self.front = grading.visible
        self.held_out = grading.hidden if self.device == "cuda" else []
        self.timed = self.front + self.held_out

    # -- performance ---------------------------------------------------------------------
    def performance(self, gate: GateResult) -> None:
        rounds = TIMING_ROUNDS[self.device]
        settings = self._settings()
        settings = dataclasses.replace(settings, cap_s=settings.cap_s / rounds)
        gate.details["settings"] = settings.__dict__ | {"rounds": rounds}
        samples: dict[str, list[list[float]]] = {plan.id: [] for plan in self.timed}
        for round_ in range(rounds):
            for plan in self.timed:
                if round_ and _settled_in_one_round(samples[plan.id][0], settings):
                    continue
                problems = self._time_candidate(plan, settings, samples[plan.id])
                if problems:
                    raise GateFailure(
                        Verdict.TIMING_REJECTED,
                        f"{plan.label}: {problems[0]}",
                        {"problems": problems if plan.set != "hidden" else []},
                    )
        gate.reason = f"{len(self.timed)} shape(s) timed"
        if rounds > 1:
            gate.reason += f" (calls under {ONE_ROUND_US:.0f} us in {rounds} rounds)"
        if self.device == "cpu":
            gate.reason += " (CPU: smoke shapes only, not comparable, no speed-of-light floor)"

    def _settings(self) -> Settings:
        cap = self.problem.time_cap_s or DEFAULT_TIME_CAP_S
        if self.device == "cpu":
            return dataclasses.replace(CPU_SETTINGS, cap_s=min(cap, CPU_SETTINGS.cap_s))
        l2 = max(environment.l2_bytes(), self.hardware.l2_bytes if self.hardware else 0)
        return Settings(
            cap_s=cap, flush_bytes=max(2 * l2, FLUSH_MIN_BYTES), spread_bytes=SPREAD_BYTES
        )

    def _time_candidate(
        self, plan: ShapePlan, settings: Settings, rounds: list[list[float]]
    ) -> list[str]:
        """Time one round of `plan` and add its samples to `rounds` (the earlier rounds')."""
        out = self.grading.folder.cand / f"timed_{plan.id}.pt"
        files = self.grading.call_files(plan, out)
        message = {"op": "time", **files, "settings": settings.__dict__}
        started = time.monotonic()
        timeout_s = settings.cap_s + self.grading.limits.timing_margin_s
        reply = self.grading.ask_candidate(message, timeout_s, Verdict.RUNTIME_ERROR, plan)
        problems = scoring.timing_problems(reply, time.monotonic() - started)
        if not scoring.well_formed(reply):
            out.unlink(missing_ok=True)
            return problems  # nothing to summarize: the problems name the malformed reply
        recheck = self.grading.compare(plan, reply, out, "kept")
        out.unlink(missing_ok=True)
        if not recheck.correct:
            problems.append(f"outputs of timed calls are wrong ({recheck.error})")
        shape = self.shapes[plan.id]
        rounds.append(reply["event_ms"])
        shape.time = scoring.summarize(rounds)
        if self.hardware and self.device == "cuda":
            floor = scoring.score_shape(shape, hardware=self.hardware, **self._work(plan))
            problems += [floor] if floor else []
        return problems

    def _work(self, plan: ShapePlan) -> dict[str, Any]:
        return {
            "regime": self.problem.regime,
            "dtype": self.problem.peak_dtype,
            "flops": self.problem.flops(plan.params),
            "nbytes": self.problem.bytes(plan.params),
        }

    # -- score ---------------------------------------------------------------------------
    def score(self, gate: GateResult) -> None:
        self.grading.close_candidate()
        result = self.grading.result
        started = time.perf_counter()
        notes = [note for plan in self.timed if (note := self._baselines(plan))]
        result.cost["baselines_s"] = round(time.perf_counter() - started, 3)
        for plan in self.timed:
            scoring.score_shape(self.shapes[plan.id], hardware=self.hardware, **self._work(plan))
        gate.details["baseline_notes"] = notes[:5]
        if self.hardware is None:
            result.score = result.hidden_score = None
            gate.reason = "no roofline for this GPU: score is null"
            return
        scored = self._scored_held_out()
        result.score = self._geomean(self.front)
        result.hidden_score = self._geomean(scored)
        gate.reason = f"geomean of {len(self.front)} {self.front[0].set} peak fractions"
        if self.held_out:
            gate.reason += f"; held-out: {len(scored)} of {len(self.held_out)} in the same regime"
        if self.device == "cpu":
            gate.reason += " against the declared CPU roofline (not comparable, never ranked)"

    def _scored_held_out(self) -> list[ShapePlan]:
        """Held-out shapes sized like the visible ones; the rest count for correctness only."""
        visible = [self._floor_s(plan) for plan in self.front]
        for plan in self.front:
            self.shapes[plan.id].scored = True
        scored = []
        for plan in self.held_out:
            in_regime = scoring.in_visible_regime(self._floor_s(plan), visible)
            self.shapes[plan.id].scored = in_regime
            scored += [plan] if in_regime else []
        return scored

    def _floor_s(self, plan: ShapePlan) -> float:
        work = self._work(plan)
        return hardware.speed_of_light_s(
            self.hardware, flops=work["flops"], nbytes=work["nbytes"], dtype=work["dtype"]
        )

    def _geomean(self, plans: list[ShapePlan]) -> float | None:
        return scoring.geomean([self.shapes[plan.id].peak_fraction for plan in plans])

    def _baselines(self, plan: ShapePlan) -> str | None:
        shape = self.shapes[plan.id]
        # CPU timings belong to the machine and its load: the reference is timed in this grading.
        cached = self.grading.cached.get(shape.baseline_key) if self.device == "cuda" else None
        if cached:
            for kind in BASELINES["cuda"]:
                setattr(shape, f"baseline_{kind}", TimingStats.from_dict(cached.get(kind)))
            shape.baseline_cached = True
            return None
        for kind in BASELINES[self.device]:
            try:
                stats = self._time_reference(plan, kind)
            except GateFailure as failure:
                return f"{plan.label} {kind}: {failure.reason}"
            setattr(shape, f"baseline_{kind}", stats)
        return None

    def _time_reference(self, plan: ShapePlan, kind: str) -> TimingStats | None:
        message = {
            "op": "baseline",
            "shape": plan.message(),
            "device": self.device,
            "compile": kind == "compile",
            "library": kind == "library",
            "settings": self._settings().__dict__,
            "inputs": str(self.grading.folder.in_dir / f"inputs_{plan.id}.pt"),
        }
        reply = self.grading.ask_reference(message, BASELINE_TIMEOUT_S)
        return scoring.summarize([reply["event_ms"]]) if reply.get("event_ms") else None
