"""Writes: evaluations from creation to result, and what a run shows of them (its headline
evaluation and status). Every write of an evaluation happens in this module.

Postgres is the source of truth and Celery delivers at least once. A worker claims a queued
evaluation with a conditional UPDATE that bumps ``attempts``; that attempt number fences every
later write, so a duplicate or stale delivery changes nothing. ``lease_expires_at`` is the claim's
deadline while running, and while queued the time after which the sweeper sends the message again
(Redis keeps nothing on disk here, so a restart loses queued messages).
"""

import logging
import math
import socket
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from runners.contract import EvaluationResult, StarterComparison, Verdict, run_aggregates
from submissions.models import Evaluation, HardwareTarget, Run, ShapeResult, Solution
from submissions.services import engine, integrity, queue

logger = logging.getLogger(__name__)

Status = Evaluation.Status


@dataclass(frozen=True)
class Claim:
    evaluation_id: int
    attempt: int


def create_evaluation(
    *,
    run: Run,
    hardware: HardwareTarget | None = None,
    trigger: str = Evaluation.Trigger.UPLOAD,
    triggered_by=None,
    solution: Solution | None = None,
    send: bool = True,
) -> Evaluation:
    """Queue a grading of the run (of ``solution`` instead of its upload when given); the
    message goes out once the transaction commits (never with ``send`` off: a grade made
    elsewhere is about to be recorded, services.imports.load_graded)."""
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            run=run,
            hardware=hardware or run.hardware,
            trigger=trigger,
            triggered_by=triggered_by,
            solution=solution,
            lease_expires_at=_requeue_deadline(),
        )
        refresh_run(run_id=run.pk)
        logger.info("evaluation %s of run %s queued (%s)", evaluation.pk, run.uuid, trigger)
        if send:
            transaction.on_commit(lambda: send_evaluation(evaluation))
    return evaluation


def enqueue_evaluation(*, run: Run) -> Evaluation | None:
    """Queue the first grading of a freshly received run; a run already queued keeps its own."""
    if run.evaluations.counted().exists():
        return None
    return create_evaluation(run=run)


def reevaluate(*, runs, hardware: HardwareTarget | None = None, user=None) -> list[Evaluation]:
    """Queue a new grading of each run; earlier evaluations stay as history."""
    return [
        create_evaluation(
            run=run, hardware=hardware, trigger=Evaluation.Trigger.REEVALUATE, triggered_by=user
        )
        for run in runs
    ]


def no_worker_message(hardware: HardwareTarget) -> str:
    return (
        f"No worker is listening on {hardware.name}'s queue ({hardware.queue_name}), so nothing "
        "was queued: start a worker for that queue first."
    )


def send_evaluation(evaluation: Evaluation) -> None:
    lineage = evaluation.trigger == Evaluation.Trigger.LINEAGE
    queue.enqueue(
        queue.EVALUATE,
        evaluation_id=evaluation.pk,
        queue=evaluation.hardware.queue_name,
        priority=queue.LOW_PRIORITY if lineage else None,
    )


def claim(*, evaluation_id: int, worker: str = "") -> Claim | None:
    """Take a queued evaluation for this worker (its Celery node name, e.g. ``gpu1@host``: one
    per GPU); None when another delivery already has it."""
    now = timezone.now()
    claimed = Evaluation.objects.filter(pk=evaluation_id, status=Status.QUEUED).update(
        status=Status.RUNNING,
        attempts=F("attempts") + 1,
        started_at=now,
        heartbeat_at=now,
        lease_expires_at=now + timedelta(seconds=settings.ARENA_EVAL_LEASE_S),
        worker_host=worker or socket.gethostname(),
    )
    if not claimed:
        return None
    attempt, run_id = Evaluation.objects.values_list("attempts", "run_id").get(pk=evaluation_id)
    refresh_run(run_id=run_id)
    return Claim(evaluation_id, attempt)


def heartbeat(claim: Claim) -> bool:
    """Extend the lease; False when the claim is no longer ours (the sweeper took it back)."""
    now = timezone.now()
    return bool(
        _owned(claim).update(
            heartbeat_at=now, lease_expires_at=now + timedelta(seconds=settings.ARENA_EVAL_LEASE_S)
        )
    )


def run_evaluation(*, evaluation_id: int, worker: str = "") -> None:
    """Claim, grade and record one evaluation; the whole life of one delivered message."""
    current = claim(evaluation_id=evaluation_id, worker=worker)
    if current is None:
        logger.info("evaluation %s: nothing to claim (duplicate or finished)", evaluation_id)
        return
    evaluation = Evaluation.objects.select_related(
        "run__problem", "run__solution", "hardware", "solution"
    )
    try:
        result = engine.grade(
            evaluation=evaluation.get(pk=evaluation_id), on_tick=lambda: heartbeat(current)
        )
    except engine.LeaseLost:
        logger.warning("evaluation %s: lease lost during attempt %s", *_ids(current))
        return
    except engine.EngineFailure as exc:
        release_after_failure(current, reason=str(exc))
        return
    record_result(current, result)


def record_result(claim: Claim, result: EvaluationResult) -> bool:
    """Store the engine's result once; False when this attempt no longer owns the evaluation."""
    # What is stored, and mapped to rows, is the finite form: non-finite numbers (an older
    # engine's, or a result built in memory) are null and listed in ``non_finite``.
    result = EvaluationResult.from_dict(result.to_dict())
    hardware = Evaluation.objects.select_related("hardware").get(pk=claim.evaluation_id).hardware
    untrusted = integrity.grade_provenance(result, hardware=hardware)
    with transaction.atomic():
        written = _owned(claim).update(
            trusted=not untrusted,
            status=Status.DONE,
            verdict=result.verdict,
            reason=result.reason[:10_000],
            score=result.score,
            hidden_score=result.hidden_score,
            **speedups(result.shapes),
            correct_visible=result.correct_visible,
            correct_hidden=result.correct_hidden,
            **starter_columns(result),
            result=result.to_dict(),
            environment=result.environment,
            engine_version=result.engine_version,
            finished_at=timezone.now(),
            lease_expires_at=None,
        )
        if not written:
            logger.warning("evaluation %s: attempt %s finished too late", *_ids(claim))
            return False
        _replace_shapes(claim.evaluation_id, result)
        _publish_if_due(claim.evaluation_id)
        _refresh_for(claim.evaluation_id)
    logger.info("evaluation %s graded: %s", claim.evaluation_id, result.verdict)
    return True


def speedups(shapes) -> dict:
    """The run's speedups over its visible shapes, by the engine's rule (run_aggregates)."""
    figures = run_aggregates(shapes, front="visible", ok=True, by_speedup=False)
    return {"speedup_eager": figures.speedup_eager, "speedup_compile": figures.speedup_compile}


def rescore(*, evaluations) -> int:
    """Recompute graded evaluations' aggregates (score, held-out score, speedups) from their
    stored shape rows by the engine's current rule, after a change of that rule; returns how
    many changed. The boards they count on are refreshed. Evaluations without shape rows (an
    engine failure, a grade refused before any shape ran) keep what they have."""
    changed, hardware_ids = 0, set()
    graded = evaluations.filter(status=Status.DONE).select_related("hardware", "run__problem")
    for evaluation in graded.prefetch_related("shapes").iterator(chunk_size=500):
        shapes = list(evaluation.shapes.all())
        if not shapes:
            continue
        figures = run_aggregates(
            shapes,
            front="smoke" if evaluation.hardware.device == "cpu" else "visible",
            ok=evaluation.verdict == Evaluation.Verdict.OK,
            by_speedup=evaluation.run.problem.regime == "speedup",
        )
        now = {name: getattr(figures, name) for name in RESCORED}
        if all(_same(getattr(evaluation, name), now[name]) for name in RESCORED):
            continue
        Evaluation.objects.filter(pk=evaluation.pk).update(**now)
        changed += 1
        hardware_ids.add(evaluation.hardware_id)
    queue.refresh_boards_on_commit(hardware_ids=sorted(hardware_ids))
    return changed


RESCORED = ("score", "hidden_score", "speedup_eager", "speedup_compile")


def _same(stored: float | None, now: float | None) -> bool:
    if stored is None or now is None:
        return stored is now
    return math.isclose(stored, now, rel_tol=1e-9, abs_tol=1e-12)


def starter_columns(result: EvaluationResult) -> dict:
    """The kernel-to-kernel comparison with the starter, as the run page and API show it."""
    starter = result.starter or StarterComparison()
    return {
        "starter_quadrant": starter.quadrant or "",
        "starter_hidden_correct": starter.starter_hidden_correct,
        "conditional_hidden_correct": starter.conditional_hidden_correct,
    }


def release_after_failure(claim: Claim, *, reason: str) -> None:
    """Queue the evaluation again after an infrastructure failure, or give up after N attempts."""
    logger.warning("evaluation %s attempt %s failed: %s", *_ids(claim), reason[:500])
    with transaction.atomic():
        evaluation = _owned(claim).select_for_update().first()
        if evaluation is not None:
            _retry_or_fail(evaluation, reason=reason)


@dataclass(frozen=True)
class SweepReport:
    requeued: int = 0
    resent: int = 0
    failed: int = 0
    started: int = 0


def sweep(*, now=None) -> SweepReport:
    """Take back evaluations whose worker vanished, resend messages the broker may have lost,
    and start gradings that were never queued."""
    now = now or timezone.now()
    running = Evaluation.objects.filter(status=Status.RUNNING, lease_expires_at__lt=now)
    queued = Evaluation.objects.filter(status=Status.QUEUED).exclude(lease_expires_at__gte=now)
    lost = list(queued.values_list("pk", flat=True))
    outcomes = [_take_back(pk, now=now) for pk in running.values_list("pk", flat=True)]
    report = SweepReport(
        requeued=outcomes.count("requeued"),
        resent=sum(_resend(pk, now=now) for pk in lost),
        failed=outcomes.count("failed"),
        started=_start_forgotten(now=now),
    )
    if report != SweepReport():
        logger.warning("sweeper: %s", report)
    return report


def _start_forgotten(*, now) -> int:
    """Runs received but never queued (the upload's enqueue failed) get their first grading."""
    cutoff = now - timedelta(seconds=settings.ARENA_EVAL_REQUEUE_AFTER_S)
    graded = Evaluation.objects.counted().values("run_id")
    forgotten = Run.objects.filter(status=Run.Status.RECEIVED, created_at__lt=cutoff).exclude(
        pk__in=graded
    )
    for run in forgotten:
        create_evaluation(run=run, trigger=Evaluation.Trigger.SWEEPER)
    return len(forgotten)


def _take_back(pk: int, *, now) -> str:
    with transaction.atomic():
        evaluation = (
            Evaluation.objects.select_for_update()
            .filter(pk=pk, status=Status.RUNNING, lease_expires_at__lt=now)
            .first()
        )
        if evaluation is None:
            return "skipped"
        reason = f"worker {evaluation.worker_host or '?'} stopped heartbeating"
        return _retry_or_fail(evaluation, reason=reason, now=now)


def _resend(pk: int, *, now) -> bool:
    sent = Evaluation.objects.filter(pk=pk, status=Status.QUEUED).exclude(lease_expires_at__gte=now)
    if not sent.update(lease_expires_at=_requeue_deadline(now)):
        return False
    evaluation = Evaluation.objects.select_related("hardware").get(pk=pk)
    transaction.on_commit(lambda: send_evaluation(evaluation))
    return True


def _retry_or_fail(evaluation: Evaluation, *, reason: str, now=None) -> str:
    if evaluation.attempts >= settings.ARENA_EVAL_MAX_ATTEMPTS:
        _fail(evaluation, reason=reason)
        return "failed"
    logger.warning("evaluation %s: %s; queued again", evaluation.pk, reason[:500])
    _requeue(evaluation, now=now)
    return "requeued"


def _requeue(evaluation: Evaluation, *, now=None) -> None:
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=Status.QUEUED, lease_expires_at=_requeue_deadline(now), heartbeat_at=None
    )
    _refresh_for(evaluation.pk)
    transaction.on_commit(lambda: send_evaluation(evaluation))


def _fail(evaluation: Evaluation, *, reason: str) -> None:
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=Status.ERROR,
        verdict=Verdict.INFRA_ERROR,
        lease_expires_at=None,
        reason=f"gave up after {evaluation.attempts} attempts; last: {reason}"[:10_000],
        finished_at=timezone.now(),
    )
    _refresh_for(evaluation.pk)
    logger.error("evaluation %s failed as infra_error: %s", evaluation.pk, reason[:500])


def _replace_shapes(evaluation_id: int, result: EvaluationResult) -> None:
    ShapeResult.objects.filter(evaluation_id=evaluation_id).delete()
    ShapeResult.objects.bulk_create(
        ShapeResult.from_schema(shape, evaluation_id=evaluation_id) for shape in result.shapes
    )


def _publish_if_due(evaluation_id: int) -> None:
    # Only the first grading publishes: a maintainer's withdrawal survives re-evaluations. A
    # grade not made as the protocol requires is never published (services.integrity), nor is
    # a lineage version's.
    if not settings.ARENA_PUBLISH_ON_GRADE:
        return
    first = (
        Evaluation.objects.counted()
        .filter(pk=evaluation_id, trusted=True)
        .exclude(trigger=Evaluation.Trigger.REEVALUATE)
    )
    Run.objects.filter(evaluations__in=first).update(published=True)


def refresh_run(*, run_id: int) -> None:
    """Recompute what a run shows of its evaluations: its headline evaluation and its status.

    The one place both are written. The headline is the latest completed evaluation on the
    run's own hardware, else its latest grader failure there; gradings on other targets (and
    their failures) never replace it, and lineage gradings count for neither. A new headline
    refreshes the run's board after the commit.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().only("hardware_id", "headline_evaluation_id")
        run = run.get(pk=run_id)
        rows = list(
            Evaluation.objects.counted()
            .filter(run_id=run_id)
            .values("pk", "hardware_id", "status", "finished_at", "created_at")
        )
        headline = headline_of(rows, hardware_id=run.hardware_id)
        Run.objects.filter(pk=run_id).update(
            headline_evaluation_id=headline, status=_run_status(rows, headline=headline)
        )
    if headline != run.headline_evaluation_id:
        run = Run.objects.select_related("headline_evaluation__hardware").get(pk=run_id)
        integrity.refresh_grade_flags(run=run)
        queue.refresh_boards_on_commit(hardware_ids=[run.hardware_id])


def headline_of(rows: list[dict], *, hardware_id: int) -> int | None:
    finished = [
        row
        for row in rows
        if row["hardware_id"] == hardware_id and row["status"] in (Status.DONE, Status.ERROR)
    ]
    best = max(finished, key=_headline_rank, default=None)
    return best["pk"] if best else None


def _headline_rank(row: dict) -> tuple:
    return (row["status"] == Status.DONE, row["finished_at"] or row["created_at"], row["pk"])


def _run_status(rows: list[dict], *, headline: int | None) -> str:
    statuses = {row["status"] for row in rows}
    if Status.RUNNING in statuses:
        return Run.Status.EVALUATING
    if Status.QUEUED in statuses:
        return Run.Status.QUEUED
    if headline is not None:
        statuses = {row["status"] for row in rows if row["pk"] == headline}
    if not statuses:
        return Run.Status.RECEIVED
    return Run.Status.EVALUATED if Status.DONE in statuses else Run.Status.FAILED


def _refresh_for(evaluation_id: int) -> None:
    run_id = Evaluation.objects.values_list("run_id", flat=True).get(pk=evaluation_id)
    refresh_run(run_id=run_id)


def _owned(claim: Claim):
    return Evaluation.objects.filter(
        pk=claim.evaluation_id, status=Status.RUNNING, attempts=claim.attempt
    )


def _ids(claim: Claim) -> tuple[int, int]:
    return claim.evaluation_id, claim.attempt


def _requeue_deadline(now=None):
    return (now or timezone.now()) + timedelta(seconds=settings.ARENA_EVAL_REQUEUE_AFTER_S)
