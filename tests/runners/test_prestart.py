"""Each round's candidate process is started while the round before it works (runners.gates.
Grading.prestart_candidate), so a restart waits only for the solution's import and the model;
a prestarted process that died is replaced by a fresh one. The real engine on the CPU, with the
CUDA path's three rounds."""

import pytest
from engine_support import FAST_LIMITS, RUNTIME, TINY, run_bounded

from runners import gates, performance, processes
from runners.evaluate import evaluate
from runners.sandbox import Limits
from runners.schema import Verdict


@pytest.fixture
def events(monkeypatch):
    """Three rounds on the CPU; records when candidate processes start and end."""
    monkeypatch.setitem(performance.TIMING_ROUNDS, "cpu", 3)
    seen: list[tuple[str, int]] = []
    new, close = processes.new_candidate, gates.Worker.close

    def started(*args):
        worker = new(*args)
        seen.append(("start", worker.proc.pid))
        return worker

    def closed(self):
        seen.append(("end", self.proc.pid))
        close(self)

    monkeypatch.setattr(processes, "new_candidate", started)
    monkeypatch.setattr(gates.Worker, "close", closed)
    return seen


def grade():
    return run_bounded(
        evaluate, TINY, RUNTIME / "honest.py", device="cpu", limits=Limits(**FAST_LIMITS)
    )


def test_the_next_rounds_process_starts_before_this_round_ends(events):
    result = grade()

    assert result.verdict == Verdict.OK, result.reason
    assert len(result.gate("performance").details["process_starts_s"]) == 2
    starts = [pid for what, pid in events if what == "start"]
    assert len(starts) == 3  # one per round: the last round starts none it will not use
    first, second, third = starts
    assert events.index(("start", second)) < events.index(("end", first))
    assert events.index(("start", third)) < events.index(("end", second))
    assert {pid for what, pid in events if what == "end"} >= set(starts)  # none left running


def test_a_prestarted_process_that_died_is_replaced(events, monkeypatch):
    prestart = gates.Grading.prestart_candidate

    def dies(self):
        prestart(self)
        self._spare.kill()
        self._spare.proc.wait()

    monkeypatch.setattr(gates.Grading, "prestart_candidate", dies)
    result = grade()

    assert result.verdict == Verdict.OK, result.reason
    starts = [pid for what, pid in events if what == "start"]
    assert len(starts) == 5  # the first, two dead spares and two fresh replacements
    assert {pid for what, pid in events if what == "end"} >= set(starts)
