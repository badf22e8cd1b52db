"""A synthetic run history for the demo (``make demo``), marked as demo data on every page."""

from django.core.management.base import BaseCommand, CommandError

from submissions.demo.history import write_history


class Command(BaseCommand):
    help = (
        "Write a synthetic history of graded runs (a dozen agent configurations, repeated runs, "
        "every failure kind) marked metadata.demo=synthetic; replaces the previous one."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--runs-per-cell", type=int, default=4, help="runs per configuration, problem and GPU"
        )
        parser.add_argument("--seed", type=int, default=10)

    def handle(self, *args, runs_per_cell, seed, **options):
        try:
            report = write_history(runs_per_cell=runs_per_cell, seed=seed)
        except LookupError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"synthetic history: {report.runs} runs, {report.evaluations} evaluations, "
            f"{report.shapes} shape results (replaced {report.removed} runs); "
            f"boards refreshed: {', '.join(report.boards)}"
        )
        self.stdout.write("verdicts: " + ", ".join(f"{k} {v}" for k, v in report.verdicts.items()))
