"""Recompute stored grades' aggregates after a change of the engine's rule for them."""

from django.core.management.base import BaseCommand, CommandError

from submissions.models import Evaluation, HardwareTarget, Problem
from submissions.services.evaluations import rescore


class Command(BaseCommand):
    help = (
        "Recompute graded evaluations' score, held-out score and speedups from their stored shape "
        "rows by the engine's current rule (runners.contract.run_aggregates), and refresh the "
        "boards; for a change of that rule, no GPU needed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--hardware", action="append", help="only these targets (slugs)")
        parser.add_argument("--problem", action="append", help="only these problems (slugs)")

    def handle(self, *args, hardware=None, problem=None, **options):
        _known(HardwareTarget, hardware, "hardware target")
        _known(Problem, problem, "problem")
        evaluations = Evaluation.objects.all()
        if hardware:
            evaluations = evaluations.filter(hardware__slug__in=hardware)
        if problem:
            evaluations = evaluations.filter(run__problem__slug__in=problem)
        graded = evaluations.filter(status=Evaluation.Status.DONE).count()
        changed = rescore(evaluations=evaluations)
        self.stdout.write(f"{changed} of {graded} graded evaluation(s) changed")


def _known(model, slugs: list[str] | None, what: str) -> None:
    """A slug that names nothing is a typo, not an empty selection: say so."""
    unknown = sorted(set(slugs or ()) - set(model.objects.values_list("slug", flat=True)))
    if unknown:
        raise CommandError(f"no {what} {', '.join(unknown)}")
