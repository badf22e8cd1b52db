"""Writes: a run's lineage, the versions of its solution.py rebuilt from the transcript.

Called when a transcript is processed. Each version's content is a ``Solution`` row, stored once
per sha256 like uploaded solutions, so a run that rewrites the same file many times and runs
that share versions cost one file per distinct content."""

import logging

from django.core.files.base import ContentFile
from django.db import transaction

from submissions.models import LineageVersion, Run, RunLineage, Solution
from submissions.models.runs import solution_ast_hash
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
