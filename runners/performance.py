"""The performance and score gates: the candidate's timing, the reference baselines, the roofline.

They run after the correctness gates of `runners.gates`, through the same `Grading` (its shape
results, run folder and processes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

from runners import environment, hardware, launches, progress, scoring
from runners.gates import GateFailure, Grading
from runners.plan import ShapePlan
from runners.problem import STARTER_CATEGORIES
from runners.schema import GateResult, TimingStats, Verdict
from runners.solution_files import read_solution
from runners.timing import Settings

# Each reference timing (one shape, one kind) may take this long; one that runs past it gives
# its kind up for the rest of the grade and for every later grade (cached as timed out): KDA's
# chunk-form reference loops over 4,096 chunk rows in Python, which torch.compile unrolls, and its
# compile baselines kept four workers for the whole of two 10-minute calls (docs/benchmarks.md,
# "Third session"). Every baseline of a grade shares BASELINE_BUDGET_S; what the budget leaves
# untimed, a later grade times (each grade caches what it measured).
BASELINE_TIMEOUT_S = 180.0
BASELINE_BUDGET_S = 420.0
# The order baselines are timed in, over every shape: those a score or a comparison needs first,
# torch.compile (a compilation per shape) last.
BASELINE_ORDER = ("eager", "starter", "library", "compile")
# A reference timing's warm-up and sample counts give way after this long (timing.Settings.
# count_cap_s): a reference of a second a call is timed in seconds, not a minute a shape.
REFERENCE_COUNT_CAP_S = 2.0
DEFAULT_TIME_CAP_S = 2.0
# At least 2x L2, and never under do_bench's 256 MiB: zeroing it keeps the device busy (~85 us on
# an H100) while the host launches the timed call, so launch latency stays out of the window.
FLUSH_MIN_BYTES = 256 * 2**20
# How long the device waits at most, between the flush and the start event, for the host to
# finish queuing the call (runners.hold). Without a hold a 3.7 us call read 12 and 18 us in 2 of
# 5 processes on the H100; behind a fixed 200 us spin a call that takes 250 us to queue still
# read 47 to 194 us (docs/benchmarks.md, "The hold kernel", "Timing protocol 4").
HOLD_TIMEOUT_US = 5000.0
# Static flags (runners.static_check) of solutions that run work on streams of their own: such
# work could start during the flush or the hold, before the window opens, so their calls are
# timed from an idle device and without a hold (runners.timing.Settings.idle_start).
IDLE_START_FLAGS = frozenset({"side_stream"})
# The warm-up of compute-bound problems (regimes other than "memory"): on the H100 the SM clock
# runs a step or two higher for 0.2-0.3 s after the device idles (between shapes, say), and a
# compute-bound call follows it (806 us after warming, 796 us before); memory-bound calls do not.
COMPUTE_WARMUP_S = 0.5
# A compute-bound timing that starts less than this long after the device was last busy in the
# same process counts the time it has been busy as warm-up, at least 0.1 s of its own calls
# (runners.timing.Settings.busy_gap_s): a shape timed right after another warms up for 0.1 s.
# On an H200 a bf16 GEMM's first calls after 5 ms idle ran at the busy pace, after 20 ms 4 %
# faster, after 50 ms 13 % faster (`bench/warmup_gap.py`). Between two shapes the candidate
# writes the kept outputs and builds the next model (22 ms to a second), and keeps the device
# busy meanwhile (runners.timing.BusyDevice): fp8_gemm's re-grade went from 74-77 s to 56-64 s
# on H200 hosts (docs/benchmarks.md, "Cost of a grade", Session 50).
COMPUTE_BUSY_GAP_S = 0.01
# Inputs and outputs of timed calls spread over this much memory (runners.timing.Settings).
SPREAD_BYTES = 2 * 2**30
# Each shape is timed in this many rounds, one after another over all shapes, each round with a
# share of the shape's time cap, in a process of its own. Two are the fewest that say whether a
# shape's time holds across processes: where they disagree beyond `scoring.SETTLED_ERROR`, the
# shape takes more rounds (MORE_ROUNDS). A slow episode (late launches adding microseconds to
# every call for seconds, seen on the H100) puts one round 2-3x off, so the shape takes a third,
# and `scoring.round_center` leaves the odd one out. A memory-bound round of softmax costs about
# 7 s, mostly moving its 1 GiB shape's data, 2.4 s of it measuring (docs/benchmarks.md, "Cost of
# a grade", Session 49).
TIMING_ROUNDS = {"cuda": 2, "cpu": 1}
# A memory-bound round samples for at most this share of the time cap, as each of the three it
# took until session 49 did (the precision of docs/benchmarks.md was measured so): its two rounds
# sample for two thirds of it, more rounds where they disagree. On CUDA a memory-bound shape that
# does not reach its error target in a round is noisy call to call (paged_attention's: 1 s a
# round at half the cap); on the CPU the one round has the whole cap.
MEMORY_ROUND_SHARE = 1 / 3
# Compute-bound problems (every regime but "memory") take more rounds on CUDA: an unlocked SM
# clock sits on steps about 1.3 % apart for seconds, each round lands on one step or another, and
# only the mean over more rounds reproduces (fp8_gemm over five grades, the worst shape of 50 us
# or more: 0.63 % from 3 rounds, 0.38 % from 5, 0.32 % from 6; docs/benchmarks.md, "Six rounds
# for compute-bound problems"). Memory-bound calls do not follow the clock. The rounds share the
# same time cap.
COMPUTE_ROUNDS = 6
# A shape whose rounds still disagree after those (`scoring.unsettled`: a call's two process
# levels, the clock's steps) is timed in more rounds, alone with the other such shapes, each in a
# fresh process, up to this many times its rounds in all. On CUDA only: the CPU's one round
# gives no estimate, and CPU grades are never ranked.
MORE_ROUNDS = {"cuda": 2, "cpu": 1}
# A shape whose round shows escaped device work and nothing else (`scoring.disturbed_only`) is
# timed again, once, in a fresh process, up to this many times a grade, before it is rejected:
# on 4xH100 with a grade on every GPU, 3 of 4 real fp8 GEMMs (one Triton kernel each) read
# 1.5-1.6x more device time after the call than during it in one round of six, and passed alone
# on one GPU (docs/benchmarks.md, "Fourth session"). A solution sending work to a stream of its
# own escapes on every attempt, and the slower attempt is the round's (`_retime`).
RETIMES = 2
# torch.compile on CPU needs a C++ toolchain and seconds per shape; the CPU target is never
# ranked, so its speedup is over eager only.
# "library" times reference.py's optional Library module (cuBLAS, SDPA, torch.topk...): the
# best library implementation, a reference line next to eager and compile. Kernel-to-kernel
# problems (runners.problem.STARTER_CATEGORIES) also time their starter.py on either device.
BASELINES = {"cuda": ("eager", "compile", "library"), "cpu": ("eager",)}
# Calls of each shape profiled once every shape is timed, whose kernel names must include one the
# solution defines (runners.launches; CUDA only: the CPU has no kernel profiler). Never before
# timing: once the profiler has attached, every later launch in the process is slower (on the
# H100 a 4 us kernel timed 24 us in the rounds after a profiled one).
PROFILED_CALLS = 2
CPU_SETTINGS = Settings(warmup=1, min_samples=3, max_samples=20, cap_s=0.5)


class Performance:
    def __init__(self, grading: Grading):
        self.grading = grading
        self.problem, self.device = grading.problem, grading.device
        self.hardware, self.shapes = grading.hardware, grading.shapes
        # On CPU the held-out shape only proves correctness: the interpreter is too slow to time it.
        self.front = grading.visible
        self.held_out = grading.hidden if self.device == "cuda" else []
        # Held-out shapes smaller than the visible regime count for correctness only
        # (`_scored_held_out`), which their work says before any timing: they are not timed.
        self.timed = self.front + [plan for plan in self.held_out if self._may_count(plan)]
        self.base_rounds = self.most_rounds = 1  # set by the performance gate
        # Whether the candidate process is a fresh one no round has timed in yet.
        self._fresh = False
        files = read_solution(grading.solution)
        self.kernels = launches.defined_kernels(
            files.source.read_text(errors="replace"), native=files.sidecar_texts.values()
        )

    # -- performance ---------------------------------------------------------------------
    def performance(self, gate: GateResult) -> None:
        self.grading.finish_caching()  # no copy into the cache while anything is timed
        rounds = self.base_rounds = self._rounds()
        most = self.most_rounds = rounds * MORE_ROUNDS[self.device]
        settings = self._settings()
        memory_bound = self.device == "cuda" and not self._follows_clock
        share = MEMORY_ROUND_SHARE if memory_bound else 1 / rounds
        settings = dataclasses.replace(settings, cap_s=settings.cap_s * share)
        gate.details["settings"] = settings.__dict__ | {"rounds": rounds, "most_rounds": most}
        samples: dict[str, list[list[float]]] = {plan.id: [] for plan in self.timed}
        for index in range(rounds):
            varied = self._round(index, self._counting(self.timed), settings, samples, gate)
        more: dict[str, int] = {}
        for index in range(rounds, most):
            plans = [
                p for p in self._counting(self.timed) if scoring.unsettled(self.shapes[p.id].time)
            ]
            if not plans:
                break
            varied = self._round(index, plans, settings, samples, gate)
            more.update({plan.name: more.get(plan.name, 0) + 1 for plan in plans})
        gate.details["more_rounds"] = more
        self.grading.check_files_unchanged()
        if self.device == "cuda" and self.kernels.names:
            # Every held-out shape, timed or not: a solution whose kernel does not apply to the
            # small ones must not fall back to PyTorch there either.
            for plan in self.front + self.held_out:
                self._profile(plan, varied, gate)
        gate.reason = f"{len(self.timed)} shape(s) timed"
        counting = self._counting(self.timed)
        correctness_only = [plan.name for plan in self.held_out if plan not in counting]
        if correctness_only:
            gate.details["correctness_only"] = correctness_only
        if rounds > 1:
            gate.reason += f" in {rounds} rounds"
        if "process_starts_s" in gate.details:
            gate.reason += ", each in a fresh process"
        if more:
            most_taken = rounds + max(more.values())
            gate.reason += f"; {len(more)} of them, whose rounds disagreed, in up to {most_taken}"
        if self.device == "cpu":
            gate.reason += " (CPU: smoke shapes only, not comparable, no speed-of-light floor)"

    def _round(
        self,
        index: int,
        plans: list[ShapePlan],
        settings: Settings,
        samples: dict[str, list[list[float]]],
        gate: GateResult,
    ) -> Settings:
        """Time one round of `plans`, adding to `samples`; returns the round's settings."""
        # Each round runs in a candidate process of its own: a call made of small kernels
        # runs at one of two levels that hold for a whole process (causal_attention's 26 us
        # call: 26.1-26.6 us in half of 34 fresh processes, 27.0-28.3 us in the rest), which
        # rounds in one process cannot average (docs/benchmarks.md, "A process per round").
        # The start itself is not timed.
        if index and not self._fresh:
            self._restart(gate)
        self._fresh = False
        if index + 1 < self.most_rounds:  # the next round's process, or a retime's
            self.grading.prestart_candidate()
        # A seed per round that the candidate cannot predict: its timed calls' inputs.
        varied = dataclasses.replace(settings, vary_seed=secrets.randbits(48))
        # The round's shapes are timed back to back and re-checked after: the re-check runs
        # the reference on the same device, and each shape timed behind an idle device would
        # have to warm up again (runners.timing.Settings.busy_warmup_s). Each shape's kept
        # outputs leave the candidate's folder as its reply comes (`_take_kept`).
        timed = []
        for position, plan in enumerate(plans, 1):
            # The device is kept busy up to the next shape's calls (runners.timing.BusyDevice).
            more = position < len(plans)
            reply, problems = self._ask_timing(plan, varied, gate, busy_after=more)
            if problems and not scoring.disturbed_only(problems):
                self._reject(plan, problems)
            timed.append((plan, reply, problems))
        # The next round's process reads its inputs while this round's are re-checked: every
        # shape's for a base round, for a further one those whose rounds disagree so far (the
        # re-checks settle it, `_settle`, unless one fails).
        if index + 1 < self.base_rounds:
            upcoming = self._counting(self.timed)
        elif index + 1 < self.most_rounds:
            counting = self._counting(plans)
            upcoming = [
                plan
                for plan, reply, _ in timed
                if plan in counting and _unsettled_with(samples[plan.id], reply)
            ]
        else:
            upcoming = []
        if upcoming:
            self._restart(gate)
            self.grading.preload_candidate(upcoming, busy_gap_s=settings.busy_gap_s)
            self._fresh = True
        for plan, reply, problems in timed:
            problems += self._settle(plan, reply, varied, samples[plan.id], gate)
            if scoring.disturbed_only(problems) and len(gate.details.get("retimed", [])) < RETIMES:
                problems = self._retime(plan, index, problems[0], settings, samples, gate)
            if problems:
                self._reject(plan, problems)
        return varied

    def _restart(self, gate: GateResult) -> None:
        starts = gate.details.setdefault("process_starts_s", [])
        starts.append(round(self.grading.restart_candidate(), 3))

    @staticmethod
    def _reject(plan: ShapePlan, problems: list[str]) -> None:
        raise GateFailure(
            Verdict.TIMING_REJECTED,
            f"{plan.label}: {problems[0]}",
            {"problems": problems if plan.set != "hidden" else []},
        )

    def _retime(
        self,
        plan: ShapePlan,
        index: int,
        problem: str,
        settings: Settings,
        samples: dict[str, list[list[float]]],
        gate: GateResult,
    ) -> list[str]:
        """Time `plan`'s round again in a fresh process with fresh inputs; returns the new
        attempt's problems. The slower of the two attempts is the round's: a retime never makes
        a shape faster, so a solution that escapes work on purpose (in a process that drew the
        slower of a call's two levels, say) gains nothing from the new draw."""
        disturbed = samples[plan.id].pop()
        retimed = gate.details.setdefault("retimed", [])
        shown = problem if plan.set != "hidden" else ""  # a held-out shape's times stay here
        retimed.append({"shape": plan.name, "round": index + 1, "problem": shown})
        # No process is started beside a retime: its cause is a disturbed host. The next round
        # then starts in a process of its own.
        self.grading.restart_candidate()
        self._fresh = False
        again = dataclasses.replace(settings, vary_seed=secrets.randbits(48))
        before = len(samples[plan.id])
        reply, problems = self._ask_timing(plan, again, gate)
        problems += self._settle(plan, reply, again, samples[plan.id], gate)
        timed = len(samples[plan.id]) > before  # a malformed reply adds no round
        if timed and statistics.median(disturbed) > statistics.median(samples[plan.id][-1]):
            samples[plan.id][-1] = disturbed
            self.shapes[plan.id].time = scoring.summarize(samples[plan.id])
        return problems

    def _may_count(self, plan: ShapePlan) -> bool:
        """Whether a held-out shape can count toward hidden_score: every one where scores are
        speedups or there is no roofline, else one sized like the visible shapes."""
        if self.problem.regime == "speedup" or self.hardware is None:
            return True
        visible = [self._floor_s(front) for front in self.front]
        return scoring.in_visible_regime(self._floor_s(plan), visible)

    def _counting(self, plans: list[ShapePlan]) -> list[ShapePlan]:
        """`plans` less the held-out ones a round already timed under MIN_SCORED_US on a
        roofline: they count for correctness only, and one round says so."""
        if self.problem.regime == "speedup" or self.hardware is None:
            return plans
        return [plan for plan in plans if not self._under_scored(plan)]

    def _under_scored(self, plan: ShapePlan) -> bool:
        time = self.shapes[plan.id].time
        return plan.set == "hidden" and time is not None and time.median_us < scoring.MIN_SCORED_US

    @property
    def _follows_clock(self) -> bool:
        """Whether timed calls follow the SM clock's steps: on CUDA, every regime but memory
        (they warm up longer and are timed in more rounds)."""
        return self.device == "cuda" and self.problem.regime != "memory"

    def _rounds(self) -> int:
        return COMPUTE_ROUNDS if self._follows_clock else TIMING_ROUNDS[self.device]

    def _settings(self) -> Settings:
        cap = self.problem.time_cap_s or DEFAULT_TIME_CAP_S
        if self.device == "cpu":
            return dataclasses.replace(CPU_SETTINGS, cap_s=min(cap, CPU_SETTINGS.cap_s))
        l2 = max(environment.l2_bytes(), self.hardware.l2_bytes if self.hardware else 0)
        settings = Settings(
            cap_s=cap,
            flush_bytes=max(2 * l2, FLUSH_MIN_BYTES),
            spread_bytes=SPREAD_BYTES,
            hold_timeout_us=HOLD_TIMEOUT_US,
            idle_start=self._own_streams(),
        )
        if self._follows_clock:
            settings.warmup_s, settings.busy_gap_s = COMPUTE_WARMUP_S, COMPUTE_BUSY_GAP_S
        return settings

    def _reference_settings(self) -> Settings:
        """A baseline's timing: on a roofline its time is a reference line beside the score, and
        it samples for the share of the time cap a round of a compute-bound candidate has (a
        sixth: thousands of calls of a 100 us reference, dozens of a 4 ms one); where scores
        are speedups over it, for the whole cap."""
        settings = self._settings()
        if self.problem.regime != "speedup":
            settings.cap_s /= COMPUTE_ROUNDS
        return settings

    def _own_streams(self) -> bool:
        """Whether the static gate flagged the solution for streams of its own."""
        static = self.grading.result.gate("static")
        flags = static.details.get("flags", []) if static else []
        return any(isinstance(f, dict) and f.get("rule") in IDLE_START_FLAGS for f in flags)

    def _timed_file(self, plan: ShapePlan) -> Path:
        """Where the candidate writes a timing's kept outputs (a new file each time)."""
        return self.grading.folder.cand / f"timed_{plan.id}.tensors"

    def _kept_file(self, plan: ShapePlan) -> Path:
        """Where they wait for their re-check: out of the candidate's folder, before the next
        request runs any more of its code (the next shape's model, a fresh process)."""
        return self.grading.folder.kept / f"timed_{plan.id}.tensors"

    def _ask_timing(
        self, plan: ShapePlan, settings: Settings, gate: GateResult, busy_after: bool = False
    ) -> tuple[dict, list[str]]:
        """Have the candidate time one round of `plan` (`busy_after`: another shape follows in
        the same process); returns its reply and the problems the reply shows by itself (its
        kept outputs are re-checked by `_settle`)."""
        files = self.grading.call_files(plan, self._timed_file(plan))
        message = {"op": "time", **files, "settings": settings.__dict__, "busy_after": busy_after}
        started = time.monotonic()
        timeout_s = settings.cap_s + self.grading.limits.timing_margin_s
        reply = self.grading.ask_candidate(message, timeout_s, Verdict.RUNTIME_ERROR, plan)
        self._take_kept(plan)
        problems = scoring.timing_problems(reply, time.monotonic() - started)
        if not scoring.well_formed(reply):
            return reply, problems  # nothing to summarize: the problems name the malformed reply
        problems += launches.launch_problems(reply, self.kernels)
        if reply.get("busy_error") and "busy_error" not in gate.details:  # its word only
            # The device idled between the last shape and this one: it took the whole warm-up
            # (runners.timing.BusyDevice).
            gate.details["busy_error"] = str(reply["busy_error"])[:300]
        if reply.get("hold", "queue") != "queue":  # the fixed spin stood in: say why
            gate.details["hold_fallback"] = str(reply.get("hold_error"))[:300]
        for note in ("hold_dropped", "aliased"):  # shapes timed so (runners.timing.Samples)
            if reply.get(note) is True and plan.name not in gate.details.get(note, []):
                gate.details.setdefault(note, []).append(plan.name)
        progress.info(
            "timed %s: %d calls in %.1f s (warm-up %s s after %s s idle)",
            plan.name,
            len(reply["event_ms"]),
            time.monotonic() - started,
            _seconds(reply.get("warmup_took_s")),
            _seconds(reply.get("idle_before_s")),
        )
        return reply, problems

    def _take_kept(self, plan: ShapePlan) -> None:
        """Move the kept outputs out of the candidate's folder (a file it did not write is
        left for the re-check to find missing: the candidate's failure)."""
        kept = self._kept_file(plan)
        kept.unlink(missing_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.replace(self._timed_file(plan), kept)

    def _settle(
        self,
        plan: ShapePlan,
        reply: dict,
        settings: Settings,
        rounds: list[list[float]],
        gate: GateResult,
    ) -> list[str]:
        """Re-check the kept outputs of a timing `reply` and add its samples to `rounds` (the
        earlier rounds'); returns the problems found."""
        if not scoring.well_formed(reply):
            return []  # `_ask_timing` named it
        started = time.monotonic()
        recheck = self.grading.recheck_timed(plan, reply, self._kept_file(plan), settings.vary_seed)
        progress.info("re-checked %s in %.1f s", plan.name, time.monotonic() - started)
        problems = []
        if not recheck.correct:
            problems.append(f"outputs of timed calls are wrong ({recheck.error})")
        shape = self.shapes[plan.id]
        rounds.append(reply["event_ms"])
        shape.time = scoring.summarize(rounds)
        if self.hardware and self.device == "cuda":
            floor = scoring.score_shape(shape, hardware=self.hardware, **self._work(plan))
            problems += [floor] if floor else []
        return problems

    def _profile(self, plan: ShapePlan, settings: Settings, gate: GateResult) -> None:
        """Fail unless each profiled call of `plan` ran one of the solution's own kernels."""
        message = {
            "op": "profile",
            **self.grading.call_files(plan, self.grading.folder.cand / "unused"),
            "settings": settings.__dict__,
            "calls": PROFILED_CALLS,
        }
        reply = self.grading.ask_candidate(
            message, self.grading.limits.step_s, Verdict.RUNTIME_ERROR, plan
        )
        if "kernels" not in reply:
            error = str(reply.get("kernels_error") or "")[:200]
            gate.details.setdefault("profiler_errors", []).append(error)
            if not error:
                raise GateFailure(Verdict.TIMING_REJECTED, f"{plan.label}: no kernel names")
            return
        problems = launches.profile_problems(reply["kernels"], self.kernels)
        if problems:
            raise GateFailure(Verdict.TIMING_REJECTED, f"{plan.label}: {problems[0]}")

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
        notes = self._baselines()
        result.cost["baselines_s"] = round(time.perf_counter() - started, 3)
        for plan in self.timed:
            scoring.score_shape(self.shapes[plan.id], hardware=self.hardware, **self._work(plan))
        gate.details["baseline_notes"] = notes[:5]
        if self.problem.regime == "speedup":
            self._score_by_speedup(gate)
            return
        if self.hardware is None:
            result.score = result.hidden_score = None
            gate.reason = "no roofline for this GPU: score is null"
            return
        scored = self._scored_held_out()
        self._aggregate(by_speedup=False)
        gate.reason = f"geomean of {len(self.front)} {self.front[0].set} peak fractions"
        if self.held_out:
            gate.reason += f"; held-out: {len(scored)} of {len(self.held_out)} in the same regime"
        if self.device == "cpu":
            gate.reason += " against the declared CPU roofline (not comparable, never ranked)"

    def _score_by_speedup(self, gate: GateResult) -> None:
        """No roofline: score and hidden_score are geomean speedups over eager, every held-out
        shape counting (there is no speed of light to tell launch-bound ones apart)."""
        for plan in self.timed:
            self.shapes[plan.id].scored = True
        self._aggregate(by_speedup=True)
        gate.reason = f"geomean of {len(self.front)} {self.front[0].set} speedups over eager"
        if self.held_out:
            gate.reason += f"; held-out: {len(self.held_out)} shape(s)"
        if self.device == "cpu":
            gate.reason += " (CPU: not comparable, never ranked)"

    def _scored_held_out(self) -> list[ShapePlan]:
        """Held-out shapes sized like the visible ones; the rest count for correctness only."""
        for plan in self.front:
            self.shapes[plan.id].scored = True
        scored = []
        for plan in self.held_out:
            counts = plan in self.timed and not self._under_scored(plan)
            self.shapes[plan.id].scored = counts
            scored += [plan] if counts else []
        return scored

    def _floor_s(self, plan: ShapePlan) -> float:
        work = self._work(plan)
        return hardware.speed_of_light_s(
            self.hardware, flops=work["flops"], nbytes=work["nbytes"], dtype=work["dtype"]
        )

    def _aggregate(self, *, by_speedup: bool) -> None:
        """The run's score and held-out score from its timed shapes (`scoring.run_aggregates`,
        the rule the platform also recomputes stored grades by)."""
        shapes = [self.shapes[plan.id] for plan in self.timed]
        front = self.front[0].set
        figures = scoring.run_aggregates(shapes, front=front, ok=True, by_speedup=by_speedup)
        self.grading.result.score = figures.score
        self.grading.result.hidden_score = figures.hidden_score

    def _baselines(self) -> list[str]:
        """Each timed shape's baselines, from the cache where it holds them, else timed now in
        BASELINE_ORDER within BASELINE_BUDGET_S; a shape is `baseline_cached` only when nothing
        had to be timed. Returns a note per baseline not timed, and why."""
        started = time.monotonic()
        missing = {plan.id: self._cached_baselines(plan) for plan in self.timed}
        notes: list[str] = []
        given_up: dict[str, str] = {}  # kind: why it is not timed again
        stopped = ""  # why no more baselines are timed in this grade (a later grade times them)
        for kind in BASELINE_ORDER:
            for plan in (plan for plan in self.timed if kind in missing[plan.id]):
                shape = self.shapes[plan.id]
                left = BASELINE_BUDGET_S - (time.monotonic() - started)
                if kind in given_up:
                    shape.baseline_timed_out.append(kind)
                    notes.append(f"{plan.label} {kind}: not timed ({given_up[kind]})")
                    continue
                if left <= 0 and not stopped:
                    stopped = f"the grade's {BASELINE_BUDGET_S:.0f} s for baselines are spent"
                if stopped:
                    notes.append(f"{plan.label} {kind}: not timed ({stopped})")
                    continue
                timeout_s = min(left, BASELINE_TIMEOUT_S)
                asked = time.monotonic()
                try:
                    stats = self._time_reference(plan, kind, timeout_s)
                except _GivenUp as given:
                    shape.baseline_timed_out.append(kind)
                    notes.append(f"{plan.label} {kind}: {given}; not timed again")
                    given_up[kind] = f"{given} on {plan.label}"
                    continue
                except GateFailure as failure:
                    ran_s = time.monotonic() - asked
                    if self.grading.oracle_alive():  # the reference failed this one only
                        notes.append(f"{plan.label} {kind}: {failure.reason[:300]}")
                    elif timeout_s >= BASELINE_TIMEOUT_S and ran_s >= BASELINE_TIMEOUT_S:
                        shape.baseline_timed_out.append(kind)
                        limit = f"ran past {BASELINE_TIMEOUT_S:.0f} s"
                        notes.append(f"{plan.label} {kind}: {limit}; not timed again")
                        given_up[kind] = f"{kind} {limit} on {plan.label}"
                        stopped = "the reference process was stopped"
                    else:
                        notes.append(f"{plan.label} {kind}: {failure.reason[:300]}")
                        stopped = "the reference process was stopped"
                    continue
                setattr(shape, f"baseline_{kind}", stats)
                progress.info(
                    "baseline %s of %s in %.1f s", kind, plan.name, time.monotonic() - asked
                )
        return notes

    def _cached_baselines(self, plan: ShapePlan) -> list[str]:
        """Fill `plan`'s shape with its cached baselines; returns the kinds still to time (none
        cached, none given up by an earlier grade)."""
        shape = self.shapes[plan.id]
        # CPU timings belong to the machine and its load: the reference is timed in this grading.
        cached = (
            (self.grading.cached.get(shape.baseline_key) or {}) if self.device == "cuda" else {}
        )
        kinds = self._baseline_kinds()
        shape.baseline_timed_out = [k for k in cached.get("timed_out") or [] if k in kinds]
        missing = [
            kind
            for kind in kinds
            if cached.get(kind) is None and kind not in shape.baseline_timed_out
        ]
        for kind in kinds:
            setattr(shape, f"baseline_{kind}", TimingStats.from_dict(cached.get(kind)))
        # A held-out shape's entry also holds whether the starter is right there.
        unchecked = plan.set == "hidden" and "starter" in kinds
        unchecked = unchecked and cached.get("starter_correct") is None
        shape.baseline_cached = not missing and not unchecked
        return missing

    def _baseline_kinds(self) -> list[str]:
        """The device's baselines, the library line where reference.py has one, and the
        starter for kernel-to-kernel problems."""
        kinds = [k for k in BASELINES[self.device] if k != "library" or self.grading.has_library]
        return kinds + (["starter"] if self.problem.category in STARTER_CATEGORIES else [])

    def _time_reference(self, plan: ShapePlan, kind: str, timeout_s: float) -> TimingStats | None:
        message = {
            "op": "baseline",
            "shape": plan.message(),
            "device": self.device,
            "compile": kind == "compile",
            "library": kind == "library",
            "starter": kind == "starter",
            "settings": {
                **self._reference_settings().__dict__,
                "count_cap_s": REFERENCE_COUNT_CAP_S,
            },
            "inputs": str(self.grading.inputs_file(plan)),
        }
        reply = self.grading.ask_reference(message, timeout_s)
        if reply.get("given_up"):
            raise _GivenUp(reply["given_up"])
        return scoring.summarize([reply["event_ms"]]) if reply.get("event_ms") else None


class _GivenUp(Exception):
    """A baseline kind that cannot be timed on this problem at all (the reference process says
    why): no shape times it again, in this grade or a later one."""


def _unsettled_with(rounds: list[list[float]], reply: dict) -> bool:
    """Whether a shape's earlier `rounds` and a timing reply's samples disagree (before the
    reply's re-check adds them to the shape)."""
    if not scoring.well_formed(reply):
        return False
    return scoring.unsettled(scoring.summarize([*rounds, reply["event_ms"]]))


def _seconds(value: Any) -> str:
    """A figure from the candidate's reply for the progress log (its word only)."""
    return f"{value:.3f}" if type(value) in (int, float) else "-"
