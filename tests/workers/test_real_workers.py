"""Fault injection against real ``celery worker`` processes, Redis and PostgreSQL.

Each test grades through the fake engine on a queue of its own; the test process plays the
sweeper (beat's job in production) by calling ``evaluations.sweep``.
"""

import os
import shutil
import signal
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from submissions.models import Evaluation, ShapeResult
from submissions.services import evaluations
from tests.workers.conftest import make_cpu_hardware, make_graded_run
from tests.workers.real_workers import (
    LEASE_S,
    MAX_ATTEMPTS,
    PrivateRedis,
    Workers,
    publishing_to,
    wait_for,
)

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def workers(transactional_db, fake_engine, settings, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("worker processes need a database they can share: set DATABASE_URL")
    settings.ARENA_EVAL_LEASE_S = LEASE_S
    settings.ARENA_EVAL_MAX_ATTEMPTS = MAX_ATTEMPTS
    pool = Workers(tmp_path, fake_engine.log)
    yield pool
    pool.stop_all()


def queued(workers: Workers, solution: str) -> Evaluation:
    run = make_graded_run(solution, hardware=make_cpu_hardware(queue=workers.queue))
    return evaluations.create_evaluation(run=run)


def finished(evaluation: Evaluation, workers: Workers, *, timeout: float = 60) -> Evaluation:
    def terminal():
        evaluation.refresh_from_db()
        return evaluation.status in ("done", "error")

    try:
        wait_for(terminal, timeout=timeout, what=f"evaluation {evaluation.pk} to finish")
    except AssertionError:
        print(workers.logs())
        raise
    return evaluation


def swept_until_finished(evaluation: Evaluation, workers: Workers, *, timeout: float = 90):
    def terminal():
        evaluations.sweep()
        evaluation.refresh_from_db()
        return evaluation.status in ("done", "error")

    wait_for(terminal, timeout=timeout, what=f"evaluation {evaluation.pk} to finish")
    return evaluation


def test_a_duplicate_message_yields_one_evaluation_result(workers, fake_engine):
    evaluation = queued(workers, "# fake: sleep=2\n")
    evaluations.send_evaluation(evaluation)
    workers.start()
    workers.start()
    finished(evaluation, workers)
    wait_for(lambda: "nothing to claim" in workers.logs(), timeout=30, what="the duplicate")
    assert (evaluation.verdict, evaluation.attempts) == ("ok", 1)
    assert len(fake_engine.lines("start")) == 1
    assert ShapeResult.objects.filter(evaluation=evaluation).count() == 1


def test_a_killed_engine_is_retried_and_completes_once(workers, fake_engine):
    evaluation = queued(workers, "# fake: sleep_first=60\n")
    workers.start()
    [engine] = wait_for(lambda: fake_engine.lines("start"), timeout=60, what="the engine")
    os.kill(engine, signal.SIGKILL)
    finished(evaluation, workers)
    assert (evaluation.status, evaluation.verdict, evaluation.attempts) == ("done", "ok", 2)
    assert len(fake_engine.lines("done")) == 1


@pytest.mark.parametrize("whole_group", [True, False], ids=["worker-and-pool", "main-process"])
def test_a_killed_worker_leads_to_exactly_one_completed_evaluation(
    workers, fake_engine, whole_group
):
    evaluation = queued(workers, "# fake: sleep_first=60\n")
    first = workers.start()
    [engine] = wait_for(lambda: fake_engine.lines("start"), timeout=60, what="the engine")
    if whole_group:
        workers.kill(first)
        wait_for(lambda: not _alive(engine), timeout=10, what="the orphaned engine to die")
    else:
        os.kill(first.pid, signal.SIGKILL)
    workers.start()
    swept_until_finished(evaluation, workers)
    assert (evaluation.status, evaluation.verdict) == ("done", "ok")
    assert len(fake_engine.lines("done")) == 1
    assert Evaluation.objects.filter(run=evaluation.run).count() == 1


def test_a_poison_submission_ends_as_infra_error_after_the_last_attempt(workers, fake_engine):
    evaluation = queued(workers, "# fake: kill_parent\n")
    workers.start()
    swept_until_finished(evaluation, workers)
    assert (evaluation.status, evaluation.verdict) == ("error", "infra_error")
    assert evaluation.attempts == MAX_ATTEMPTS
    assert len(fake_engine.lines("start")) == MAX_ATTEMPTS
    assert evaluation.run.__class__.objects.get(pk=evaluation.run_id).status == "failed"


def test_a_redis_restart_loses_no_queued_evaluation(workers, fake_engine):
    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server on PATH to run a Redis of its own")
    broker = PrivateRedis()
    broker.start()
    try:
        with publishing_to(broker.url):
            _survives_restarts(workers, broker)
    finally:
        broker.stop()


def _survives_restarts(workers: Workers, broker: PrivateRedis) -> None:
    lost = queued(workers, "# fake: verdict=ok\n")
    assert broker.queue_length(workers.queue) == 1
    broker.restart()
    assert broker.queue_length(workers.queue) == 0
    workers.start(broker_url=broker.url)
    report = evaluations.sweep(now=timezone.now() + timedelta(hours=1))
    assert report.resent == 1
    assert finished(lost, workers).verdict == "ok"
    broker.restart()
    after = queued(workers, "# fake: verdict=ok\n")
    assert finished(after, workers, timeout=90).verdict == "ok"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
