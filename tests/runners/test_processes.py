"""A grade's run folder and child processes (runners.processes) start before the parent imports
torch; a failure while they start, or while the grading that takes them over is set up, ends
every process started and removes the folder. The real engine on the CPU."""

import pytest
from engine_support import FAST_LIMITS, RUNTIME, TINY, run_bounded

from runners import environment, processes
from runners.evaluate import evaluate
from runners.problem import load_problem
from runners.sandbox import Limits
from runners.schema import Verdict


@pytest.fixture
def made(monkeypatch):
    """The run folders and workers `processes` makes, as they are made."""
    seen = {"folders": [], "workers": []}
    folder_class, worker_class = processes.RunFolder, processes.Worker

    def folder(*args, **kwargs):
        seen["folders"].append(folder_class(*args, **kwargs))
        return seen["folders"][-1]

    def worker(*args, **kwargs):
        seen["workers"].append(worker_class(*args, **kwargs))
        return seen["workers"][-1]

    monkeypatch.setattr(processes, "RunFolder", folder)
    monkeypatch.setattr(processes, "Worker", worker)
    return seen


def test_a_candidate_that_cannot_start_ends_the_reference_and_removes_the_folder(made, monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("no sandbox command")

    monkeypatch.setattr(processes.sandbox, "candidate_command", refuse)
    with pytest.raises(RuntimeError, match="no sandbox command"):
        processes.start(load_problem(TINY), RUNTIME / "honest.py", "cpu", Limits(**FAST_LIMITS))

    (folder,) = made["folders"]
    (oracle,) = made["workers"]
    assert not folder.root.exists()
    assert oracle.proc.poll() is not None


def test_a_grading_that_cannot_be_set_up_closes_what_was_started(made, monkeypatch):
    def broken(device):
        raise RuntimeError("no device description")

    monkeypatch.setattr(environment, "describe", broken)
    result = run_bounded(
        evaluate, TINY, RUNTIME / "honest.py", device="cpu", limits=Limits(**FAST_LIMITS)
    )

    assert result.verdict == Verdict.INFRA_ERROR
    assert "no device description" in result.reason
    (folder,) = made["folders"]
    assert not folder.root.exists()
    assert len(made["workers"]) == 2 and all(w.proc.poll() is not None for w in made["workers"])
