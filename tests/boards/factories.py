"""Graded runs for board tests: a run, its headline evaluation and its visible shapes."""

from datetime import datetime

from django.utils import timezone

from submissions.models import (
    Evaluation,
    HardwareTarget,
    Harness,
    LanguageModel,
    Problem,
    Run,
    ShapeResult,
)
from submissions.services import evaluations
from tests.factories import make_run


def make_graded_run(
    *,
    problem: Problem,
    model: LanguageModel,
    harness: Harness,
    hardware: HardwareTarget,
    effort: str = "",
    verdict: str = "ok",
    score: float | None = 0.5,
    speedups: tuple[tuple[float | None, float | None], ...] = (),
    created: datetime | None = None,
    published: bool = True,
    **figures,
) -> Run:
    """``speedups``: (over eager, over torch.compile) per visible shape."""
    run = make_run(
        problem=problem,
        language_model=model,
        harness=harness,
        hardware=hardware,
        effort=effort,
        published=published,
        **figures,
    )
    evaluation = _headline(run, verdict=verdict, score=score)
    rows = ShapeResult.objects.bulk_create(
        ShapeResult(
            evaluation=evaluation,
            set=ShapeResult.Set.VISIBLE,
            index=n,
            params={"n": 1024 * (n + 1)},
            correct=verdict == "ok",
            speedup_eager=eager,
            speedup_compile=compiled,
        )
        for n, (eager, compiled) in enumerate(speedups)
    )
    # the run's speedups, stored with its grade as record_result stores them
    Evaluation.objects.filter(pk=evaluation.pk).update(**evaluations.speedups(rows))
    stamps = {"created_at": created} if created else {}
    Run.objects.filter(pk=run.pk).update(headline_evaluation=evaluation, **stamps)
    run.refresh_from_db()
    return run


def _headline(run: Run, *, verdict: str, score: float | None) -> Evaluation:
    ok = verdict == Evaluation.Verdict.OK
    return Evaluation.objects.create(
        run=run,
        hardware=run.hardware,
        status=Evaluation.Status.DONE,
        verdict=verdict,
        score=score if ok else 0.0,
        hidden_score=score if ok else None,
        correct_visible=verdict in (Evaluation.Verdict.OK, Evaluation.Verdict.INCORRECT_HIDDEN),
        correct_hidden=ok,
        finished_at=timezone.now(),
    )
