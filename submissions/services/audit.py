"""Writes: staff verdicts on runs, taking runs and problem versions off the boards and back.

Nothing here deletes: an invalidated run stays readable at its URL with the reason on top, a
retired problem version keeps its runs; both leave every board, export and aggregate at once.
"""

import re

from django.db import transaction
from django.utils import timezone

from submissions.models import Annotation, Problem, RetiredProblemVersion, Run
from submissions.services import queue

EVENT_ANCHOR = re.compile(r"e-[A-Za-z0-9_-]{1,90}")
MAX_EVIDENCE = 50


class AuditError(ValueError):
    """A request staff made that cannot be carried out; the message says why."""


def annotate(*, run: Run, author, verdict: str, comment: str = "", evidence=()) -> Annotation:
    if verdict not in Annotation.Verdict.values:
        raise AuditError(f"Unknown verdict {verdict!r}; one of {', '.join(Annotation.Verdict)}.")
    return Annotation.objects.create(
        run=run, author=author, verdict=verdict, comment=comment, evidence=clean_evidence(evidence)
    )


def clean_evidence(evidence) -> list[dict]:
    """Transcript event permalinks (``{"kind": "event", "event": "e-…"}``) and solution line
    ranges (``{"kind": "lines", "start": 10, "end": 24}``), checked."""
    items = list(evidence or [])
    if len(items) > MAX_EVIDENCE:
        raise AuditError(f"At most {MAX_EVIDENCE} pieces of evidence.")
    return [_clean_item(item) for item in items]


def _clean_item(item) -> dict:
    kind = item.get("kind") if isinstance(item, dict) else None
    if kind == "event" and EVENT_ANCHOR.fullmatch(str(item.get("event", ""))):
        return {"kind": "event", "event": item["event"]}
    if kind == "lines":
        start, end = item.get("start"), item.get("end", item.get("start"))
        if _line(start) and _line(end) and start <= end:
            return {"kind": "lines", "start": start, "end": end}
    raise AuditError(
        f"Evidence {str(item)[:80]!r} is neither a transcript event "
        '({"kind": "event", "event": "e-<id>"}) nor a line range '
        '({"kind": "lines", "start": 1, "end": 9}).'
    )


def _line(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1_000_000


@transaction.atomic
def invalidate(*, runs, reason: str, user) -> int:
    """Take runs off every board; they stay readable, with the reason, until restored."""
    if not reason.strip():
        raise AuditError("Say why the run is invalidated: the reason is shown on its page.")
    changing = runs.filter(invalidated_at__isnull=True)
    hardware_ids = list(changing.values_list("hardware_id", flat=True))
    count = changing.update(
        invalidated_at=timezone.now(), invalidation_reason=reason.strip(), invalidated_by=user
    )
    queue.refresh_boards_on_commit(hardware_ids=hardware_ids)
    return count


@transaction.atomic
def restore(*, runs) -> int:
    changing = runs.filter(invalidated_at__isnull=False)
    hardware_ids = list(changing.values_list("hardware_id", flat=True))
    count = changing.update(invalidated_at=None, invalidation_reason="", invalidated_by=None)
    queue.refresh_boards_on_commit(hardware_ids=hardware_ids)
    return count


@transaction.atomic
def retire_problem_version(*, problem: Problem, version: str, note: str, user):
    """Take the runs of a wrongly specified problem version off the boards, with a note."""
    if not note.strip():
        raise AuditError("Say what was wrong with this version: the note is shown with its runs.")
    known = Run.objects.filter(problem=problem, problem_version=version).exists()
    if not known and version != problem.version:
        raise AuditError(f"{problem.slug} has no version {version[:16]!r} with runs.")
    retired, _ = RetiredProblemVersion.objects.update_or_create(
        problem=problem, version=version, defaults={"note": note.strip(), "retired_by": user}
    )
    _refresh_problem_boards(problem, version)
    return retired


@transaction.atomic
def reinstate_problem_version(*, retired: RetiredProblemVersion) -> None:
    problem, version = retired.problem, retired.version
    retired.delete()
    _refresh_problem_boards(problem, version)


def _refresh_problem_boards(problem: Problem, version: str) -> None:
    runs = Run.objects.filter(problem=problem, problem_version=version)
    queue.refresh_boards_on_commit(hardware_ids=runs.values_list("hardware_id", flat=True))
