"""Work that is not timed overlaps: the correctness gates compare a shape while the candidate
runs the next, a round's shapes are timed back to back and re-checked after (each shape's kept
outputs moved out of the candidate's folder as its reply comes), and the next round's process
reads its inputs while those re-checks run. The real engine on the CPU, with
two smoke shapes and the CUDA path's three rounds."""

import shutil
from pathlib import Path

import pytest
from engine_support import FAST_LIMITS, RUNTIME, TINY, run_bounded

from runners import gates, performance, processes
from runners.evaluate import evaluate
from runners.sandbox import Limits
from runners.schema import Verdict


@pytest.fixture
def two_shapes(tmp_path) -> Path:
    folder = Path(shutil.copytree(TINY, tmp_path / "tiny_tanh"))
    spec = (folder / "problem.yaml").read_text()
    smoke = "  smoke:\n    - {rows: 4, cols: 8}\n"
    assert smoke in spec
    (folder / "problem.yaml").write_text(spec.replace(smoke, smoke + "    - {rows: 6, cols: 16}\n"))
    return folder


@pytest.fixture
def events(monkeypatch) -> list[tuple]:
    """What the grading did, in order: ("send", process, op, pid, timed files in the
    candidate's folder, busy_after), ("reply", process, op, pid, phases), ("compare", plan id),
    ("recheck", plan id), ("start", pid)."""
    seen: list[tuple] = []
    send, receive = gates.Worker.send, gates.Worker.receive
    compare, recheck = gates.Grading.compare, gates.Grading.recheck_timed
    new = processes.new_candidate

    def sent(self, message):
        timed = sorted(path.name for path in (self.log_path.parent / "cand").glob("timed_*"))
        busy_after = message.get("busy_after")
        seen.append(
            ("send", self.log_path.stem, message.get("op"), self.proc.pid, timed, busy_after)
        )
        return send(self, message)

    def received(self, ticket, *, timeout_s):
        reply = receive(self, ticket, timeout_s=timeout_s)
        seen.append(("reply", self.log_path.stem, ticket[1], self.proc.pid, reply.get("phases")))
        return reply

    def compared(self, plan, reply, out):
        seen.append(("compare", plan.id))
        return compare(self, plan, reply, out)

    def rechecked(self, plan, reply, out, seed):
        seen.append(("recheck", plan.id))
        return recheck(self, plan, reply, out, seed)

    def started(*args):
        worker = new(*args)
        seen.append(("start", worker.proc.pid))
        return worker

    monkeypatch.setattr(gates.Worker, "send", sent)
    monkeypatch.setattr(gates.Worker, "receive", received)
    monkeypatch.setattr(gates.Grading, "compare", compared)
    monkeypatch.setattr(gates.Grading, "recheck_timed", rechecked)
    monkeypatch.setattr(processes, "new_candidate", started)
    return seen


def grade(problem: Path):
    return run_bounded(
        evaluate, problem, RUNTIME / "honest.py", device="cpu", limits=Limits(**FAST_LIMITS)
    )


def candidate_sends(events: list[tuple], op: str) -> list[int]:
    return [i for i, e in enumerate(events) if e[:3] == ("send", "candidate", op)]


def test_a_shape_is_compared_while_the_candidate_runs_the_next(two_shapes, events):
    result = grade(two_shapes)

    assert result.verdict == Verdict.OK, result.reason
    runs = candidate_sends(events, "run")
    compares = [i for i, e in enumerate(events) if e[0] == "compare"]
    assert len(runs) == len(compares) == 3  # two smoke shapes, one held-out
    assert runs[0] < runs[1] < compares[0] < compares[1]  # the second run before the first compare
    assert all(shape.correct for shape in result.shapes if shape.set == "smoke")


def test_a_wrong_shape_is_failed_by_name_whichever_shape_ran_beside_its_comparison(two_shapes):
    """hardcoded_shapes is right for (4, 8) only: the first smoke shape passes while the second
    runs, the second fails."""
    result = run_bounded(
        evaluate,
        two_shapes,
        RUNTIME / "hardcoded_shapes.py",
        device="cpu",
        limits=Limits(**FAST_LIMITS),
    )

    assert result.verdict == Verdict.INCORRECT
    assert "1 of 2 shape(s) wrong; first smoke shape 2" in result.reason
    first, second = (shape for shape in result.shapes if shape.set == "smoke")
    assert first.correct is True and second.correct is False


def test_the_round_is_timed_first_and_the_next_process_loads_while_it_is_rechecked(
    two_shapes, events, monkeypatch
):
    monkeypatch.setitem(performance.TIMING_ROUNDS, "cpu", 3)
    result = grade(two_shapes)

    assert result.verdict == Verdict.OK, result.reason
    assert len(result.gate("performance").details["process_starts_s"]) == 2
    times, loads = candidate_sends(events, "time"), candidate_sends(events, "load")
    rechecks = [i for i, e in enumerate(events) if e[0] == "recheck"]
    assert len(times) == len(rechecks) == 6 and len(loads) == 2  # 2 shapes, 3 rounds
    for round_ in range(3):
        first, second = times[2 * round_ : 2 * round_ + 2]
        checked = rechecks[2 * round_ : 2 * round_ + 2]
        assert first < second < checked[0] < checked[1]  # both timed, then both re-checked
        if round_ < 2:  # the next round's process was asked to load before the re-checks
            load = loads[round_]
            assert second < load < checked[0]
            assert events[load][3] != events[first][3]  # in the next process, not this one
            assert events[load][3] == events[times[2 * round_ + 2]][3]
    # The device is kept busy after a round's first shape, up to its second, not after it.
    assert [events[i][5] for i in times] == [True, False] * 3
    # No request runs more of the solution's code while a timing's kept outputs are in its
    # folder: each was moved out as its reply came.
    assert all(e[4] == [] for e in events if e[:2] == ("send", "candidate"))
    # The later rounds' timings found their inputs loaded.
    replies = [e for e in events if e[:3] == ("reply", "candidate", "time")]
    assert len(replies) == 6
    assert all("inputs" not in (reply[4] or {}) for reply in replies[2:])


def test_the_starters_held_out_check_runs_beside_the_correctness_gates(events):
    """Kernel-to-kernel problems: the reference process is asked for the starter's check once
    the build gate passes, before the candidate's first correctness run, and its answer is
    taken after the held-out gate."""
    result = run_bounded(
        evaluate,
        TINY.parent / "tiny_tanh_triton",
        RUNTIME / "kernel_honest.py",
        device="cpu",
        limits=Limits(**FAST_LIMITS),
    )

    assert result.verdict == Verdict.OK, result.reason
    asked = [i for i, e in enumerate(events) if e[:3] == ("send", "reference", "starter_check")]
    answered = [i for i, e in enumerate(events) if e[:3] == ("reply", "reference", "starter_check")]
    runs = candidate_sends(events, "run")
    compares = [i for i, e in enumerate(events) if e[0] == "compare"]
    assert len(asked) == len(answered) == 1
    assert asked[0] < runs[0] and answered[0] > compares[-1]
    assert [s.starter_correct for s in result.shapes if s.set == "hidden"] == [True]


def test_a_further_rounds_process_loads_while_the_last_round_is_rechecked(
    two_shapes, events, monkeypatch
):
    """Shapes whose rounds disagree after the base rounds take another in a fresh process,
    which reads their inputs while the last base round's re-checks run, as a base round's
    process does; once they agree no process is started for nothing."""
    from runners import scoring

    monkeypatch.setitem(performance.TIMING_ROUNDS, "cpu", 2)
    monkeypatch.setitem(performance.MORE_ROUNDS, "cpu", 3)
    monkeypatch.setattr(scoring, "unsettled", lambda stats: stats.rounds < 3)
    result = grade(two_shapes)

    assert result.verdict == Verdict.OK, result.reason
    gate = result.gate("performance")
    assert gate.details["more_rounds"] == {"smoke 1": 1, "smoke 2": 1}
    assert len(gate.details["process_starts_s"]) == 2  # rounds 2 and 3; none after round 3
    times, loads = candidate_sends(events, "time"), candidate_sends(events, "load")
    rechecks = [i for i, e in enumerate(events) if e[0] == "recheck"]
    assert len(times) == len(rechecks) == 6 and len(loads) == 2
    assert times[3] < loads[1] < rechecks[2]  # round 3's process loads before round 2's checks
    assert {events[i][3] for i in times[4:]} == {events[loads[1]][3]}
    replies = [e for e in events if e[:3] == ("reply", "candidate", "time")]
    assert all("inputs" not in (reply[4] or {}) for reply in replies[4:])
