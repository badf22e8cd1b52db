"""Bulk writes of the synthetic load-test history that ``bench/synthetic_history.py`` generates
(never loaded by ``make demo``): its runs, their evaluations and shape rows, in a few queries a
thousand runs, and their removal. Nothing but the synthetic runs is read or touched."""

from collections import Counter

from submissions.models import Evaluation, Run
from submissions.models import ShapeResult as ShapeRow
from submissions.services.evaluations import headline_of

BATCH = 1000


def remove_runs(*, runs) -> int:
    """Deletes `runs` (the synthetic ones), children first; returns how many runs went."""
    runs.update(headline_evaluation=None)
    ShapeRow.objects.filter(evaluation__run__in=runs).delete()
    Evaluation.objects.filter(run__in=runs).delete()
    _, removed = runs.delete()
    return removed.get(Run._meta.label, 0)


def store_drafts(drafts) -> Counter:
    """Stores drafted runs: each draft has an unsaved ``run`` and its ``gradings``, pairs of an
    unsaved Evaluation and the EvaluationResult it holds. Each run's headline evaluation is
    chosen as the platform chooses it (``evaluations.headline_of``). Returns the verdicts of
    the headlines and the counts of runs, evaluations and shape rows written."""
    runs = [draft.run for draft in drafts]
    _create_dated(Run, runs)
    for draft in drafts:
        for evaluation, _ in draft.gradings:
            evaluation.run_id = draft.run.pk
    gradings = [grading for draft in drafts for grading in draft.gradings]
    evaluations = _create_dated(Evaluation, [evaluation for evaluation, _ in gradings])
    shapes = [
        ShapeRow.from_schema(shape, evaluation_id=evaluation.pk)
        for evaluation, result in gradings
        for shape in result.shapes
    ]
    ShapeRow.objects.bulk_create(shapes, batch_size=BATCH)
    for draft in drafts:
        _set_headline(draft)
    Run.objects.bulk_update(runs, ["created_at", "headline_evaluation", "status"], batch_size=250)
    Evaluation.objects.bulk_update(evaluations, ["created_at"], batch_size=250)
    verdicts = Counter(draft.run.headline_evaluation.verdict for draft in drafts)
    return verdicts + Counter(runs=len(runs), evaluations=len(evaluations), shapes=len(shapes))


def _create_dated(model, rows: list) -> list:
    """bulk_create stamps auto_now_add columns with the time of writing (on the objects too):
    the history's dates are put back on the objects, for the bulk_update that follows."""
    dates = [row.created_at for row in rows]
    model.objects.bulk_create(rows)
    for row, created_at in zip(rows, dates, strict=True):
        row.created_at = created_at
    return rows


def _set_headline(draft) -> None:
    evaluations = {evaluation.pk: evaluation for evaluation, _ in draft.gradings}
    rows = [
        {"pk": e.pk, "hardware_id": e.hardware_id, "status": e.status}
        | {"finished_at": e.finished_at, "created_at": e.created_at}
        for e in evaluations.values()
    ]
    headline = evaluations[headline_of(rows, hardware_id=draft.run.hardware_id)]
    draft.run.headline_evaluation = headline
    done = headline.status == Evaluation.Status.DONE
    draft.run.status = Run.Status.EVALUATED if done else Run.Status.FAILED
