"""The engine supervisor: time limits, lost leases, crashes, and what a dead worker leaves."""

import os
import signal
import subprocess
import sys
import time

import pytest

from submissions.services import engine
from tests.workers.conftest import FAKE_ENGINE


def run(solution: str, *, on_tick=lambda: True):
    return engine.run_engine(
        problem="softmax", solution=solution, device="cpu", baselines={}, on_tick=on_tick
    )


def test_the_engine_result_is_read_through_the_schema(fake_engine):
    result = run("# fake: verdict=timeout\n")
    assert (result.verdict, result.engine_version) == ("timeout", "fake-1")
    assert result.shapes[0].time.median_us == 10.0


def test_a_missing_solution_still_reaches_the_engine(fake_engine):
    assert run(None).verdict == "ok"


def test_an_engine_without_a_result_is_an_infrastructure_failure(fake_engine):
    with pytest.raises(engine.EngineFailure, match="status 3: fake engine crashed"):
        run("# fake: crash\n")


def test_an_infra_error_verdict_is_the_engine_failing_not_the_candidate(fake_engine):
    with pytest.raises(engine.EngineFailure, match="reported its own failure: fake infra_error"):
        run("# fake: verdict=infra_error\n")


def test_an_unreadable_result_is_an_infrastructure_failure(fake_engine):
    with pytest.raises(engine.EngineFailure, match="unreadable result"):
        run("# fake: verdict=ok\n# fake: garble\n")


def test_a_staff_log_keeps_the_engine_progress_and_feeds_the_failure_reason(fake_engine, tmp_path):
    log = tmp_path / "grade.log"
    with pytest.raises(engine.EngineFailure, match="fake engine crashed"):
        engine.run_engine(
            problem="softmax",
            solution="# fake: crash\n",
            device="cpu",
            baselines={},
            on_tick=lambda: True,
            log=log,
        )
    assert log.read_text().splitlines() == [
        "fake engine: started",
        "fake engine crashed on purpose",
    ]


def test_an_engine_past_its_time_limit_is_killed(fake_engine, settings):
    settings.ARENA_EVAL_TIMEOUT_S = 1
    started = time.monotonic()
    with pytest.raises(engine.EngineFailure, match="ran past 1s"):
        run("# fake: sleep=30\n")
    assert time.monotonic() - started < 10
    assert fake_engine.lines("done") == []


def test_a_lost_lease_stops_the_engine_at_the_next_heartbeat(fake_engine, settings):
    settings.ARENA_EVAL_HEARTBEAT_S = 0.2

    def on_tick() -> bool:
        return not fake_engine.lines("start")  # the lease lapses once the engine is running

    with pytest.raises(engine.LeaseLost):
        run("# fake: sleep=30\n", on_tick=on_tick)
    [pid] = fake_engine.lines("start")
    assert not _alive(pid)


def test_the_engine_dies_with_the_worker_process_that_started_it(fake_engine, tmp_path):
    script = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'arena_web.settings');"
        "django.setup(); from django.conf import settings;"
        f"settings.ARENA_ENGINE_COMMAND = [{sys.executable!r}, {str(FAKE_ENGINE)!r}];"
        "from submissions.services import engine;"
        "engine.run_engine(problem='p', solution='# fake: sleep=60\\n', device='cpu',"
        " baselines={}, on_tick=lambda: True)"
    )
    worker = subprocess.Popen([sys.executable, "-c", script], env=os.environ.copy())
    pid = _wait_for_start(fake_engine)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def _wait_for_start(fake_engine) -> int:
    deadline = time.monotonic() + 30
    while not fake_engine.lines("start"):
        assert time.monotonic() < deadline, "the fake engine never started"
        time.sleep(0.05)
    return fake_engine.lines("start")[0]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
