"""Writes: a run's lineage, the versions of its solution.py rebuilt from the transcript, and
their gradings.

Called when a transcript is processed. Each version's content is a ``Solution`` row, stored once
per sha256 like uploaded solutions, so a run that rewrites the same file many times and runs
that share versions cost one file per distinct content. A version's grading is an
``Evaluation`` of the run with that ``solution`` and the lineage trigger, which never counts
(``Evaluation.objects.counted``); it links to versions by content, so it survives a rebuild."""

import logging

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction

from submissions.models import (
    Evaluation,
    HardwareTarget,
    LineageVersion,
    Run,
    RunLineage,
    Solution,
)
from submissions.models.runs import solution_ast_hash
from submissions.services.evaluations import create_evaluation
from transcripts.lineage import Lineage, Version, check_final, rebuild_lineage, sha256_text
from transcripts.model import Session

logger = logging.getLogger(__name__)


def record_lineage(*, run: Run, session: Session) -> RunLineage:
    """Replace the run's stored lineage with the one rebuilt from ``session``."""
    lineage = rebuild_lineage(session, target="solution.py")
    check = check_final(lineage, run.solution.code if run.solution else None)
    with transaction.atomic():
        LineageVersion.objects.filter(run=run).delete()
        LineageVersion.objects.bulk_create(_row(run, version) for version in lineage.versions)
        stored, _ = RunLineage.objects.update_or_create(
            run=run,
            defaults={
                "target": lineage.target,
                "final_check": check.status,
                "message": check.message,
                "version_count": len(lineage.versions),
            },
        )
    _log(run, lineage, check.status)
    return stored


def _row(run: Run, version: Version) -> LineageVersion:
    return LineageVersion(
        run=run,
        index=version.index,
        solution=_solution_for(version.content) if version.content is not None else None,
        path=version.path[:500],
        how=version.how,
        tool=version.tool[:100],
        event_id=version.event_id[:64],
        turn=version.turn,
        output_tokens=version.output_tokens,
        wall_s=version.wall_s,
        note=version.note,
    )


def _solution_for(content: str) -> Solution:
    data = content.encode("utf-8", "surrogatepass")
    sha256 = sha256_text(content)
    if existing := Solution.objects.filter(sha256=sha256).first():
        return existing
    solution = Solution(sha256=sha256, size=len(data), ast_hash=solution_ast_hash(content))
    solution.file.save("solution.py", ContentFile(data), save=False)
    solution.save()
    return solution


def _log(run: Run, lineage: Lineage, status: str) -> None:
    logger.info("run %s: %s lineage versions, final %s", run.uuid, len(lineage.versions), status)


def grade_lineage(
    *, run: Run, hardware: HardwareTarget, limit: int | None = None, user=None
) -> list[Evaluation]:
    """Queue low-priority gradings of a sample of the run's versions on ``hardware``: at most
    ``limit`` (``ARENA_LINEAGE_GRADE_LIMIT``), always the first and the final one. A content
    already graded there, or waiting to be, is not queued again."""
    versions = run.lineage_versions.filter(solution__isnull=False).select_related("solution")
    sample = sampled(list(versions), limit=limit or settings.ARENA_LINEAGE_GRADE_LIMIT)
    done = set(_lineage_grades(run, hardware).values_list("solution_id", flat=True))
    fresh = {v.solution_id: v.solution for v in sample if v.solution_id not in done}
    with transaction.atomic():
        return [
            create_evaluation(
                run=run,
                hardware=hardware,
                trigger=Evaluation.Trigger.LINEAGE,
                triggered_by=user,
                solution=solution,
            )
            for solution in fresh.values()
        ]


def sampled(versions: list, *, limit: int) -> list:
    """At most ``limit`` of ``versions``, evenly spaced, the first and the last always kept."""
    if len(versions) <= limit:
        return versions
    if limit < 2:
        return versions[-1:]
    step = (len(versions) - 1) / (limit - 1)
    return [versions[round(i * step)] for i in range(limit)]


def _lineage_grades(run: Run, hardware: HardwareTarget):
    return Evaluation.objects.filter(
        run=run, hardware=hardware, trigger=Evaluation.Trigger.LINEAGE
    ).exclude(status=Evaluation.Status.ERROR)
