"""The benchmark's database: ``--runs`` synthetic graded runs (bench/board_bench.py)."""

import time

from django.core.management.base import BaseCommand, CommandError

from submissions.demo.history import write_bench


class Command(BaseCommand):
    help = (
        "Write RUNS synthetic graded runs (about ten shape results each) spread over every "
        "configuration, problem and target, marked metadata.demo=synthetic; replaces the "
        "previous synthetic runs."
    )

    def add_arguments(self, parser):
        parser.add_argument("--runs", type=int, default=10_000)
        parser.add_argument("--seed", type=int, default=10)

    def handle(self, *args, runs, seed, **options):
        started = time.perf_counter()
        try:
            report = write_bench(runs=runs, seed=seed)
        except LookupError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"{report.runs} runs, {report.evaluations} evaluations, {report.shapes} shape results "
            f"in {time.perf_counter() - started:.1f} s (replaced {report.removed} runs)"
        )
