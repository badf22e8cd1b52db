from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from submissions.models import HardwareTarget
from submissions.services.imports import RunImportError, import_kernelbench_hard
from submissions.services.registry import EngineError

SOURCES = ("kernelbench-hard",)


class Command(BaseCommand):
    help = (
        "Import the runs another benchmark publishes as runs of ours, queued for grading: "
        "`import_runs kernelbench-hard CHECKOUT --gpu h100 --target h100-sxm` (docs/problems.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("source", choices=SOURCES)
        parser.add_argument("checkout", type=Path, help="a checkout of the source's repository")
        parser.add_argument("--gpu", default="h100", help="the source's GPU folder (h100)")
        parser.add_argument(
            "--target", default="h100-sxm", help="our hardware target that grades the runs"
        )
        parser.add_argument(
            "--problems",
            type=Path,
            help="where the source's problems are imported (a folder of ARENA_EXTRA_PROBLEMS; "
            "default var/problems/kernelbench-hard-<gpu>)",
        )

        parser.add_argument(
            "--problem",
            action="append",
            default=[],
            dest="only",
            help="import only this problem's runs (repeatable; the source's name or our slug)",
        )
        parser.add_argument(
            "--run",
            action="append",
            default=[],
            dest="run_ids",
            help="import only this run (repeatable; the source's run id), queued in this order",
        )

    def handle(self, *args, source, checkout, gpu, target, problems, only, run_ids, **options):
        hardware = HardwareTarget.objects.filter(slug=target).first()
        if hardware is None:
            known = ", ".join(HardwareTarget.objects.values_list("slug", flat=True)) or "none"
            raise CommandError(f"no hardware target {target!r} (registered: {known})")
        if not checkout.is_dir():
            raise CommandError(f"{checkout}: no such folder")
        folder = problems or settings.VAR_DIR / "problems" / f"kernelbench-hard-{gpu}"
        try:
            report = import_kernelbench_hard(
                checkout=checkout,
                gpu=gpu,
                hardware=hardware,
                problems=folder,
                only=frozenset(only),
                run_ids=tuple(run_ids),
            )
        except (RunImportError, EngineError) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"{len(report.created)} run(s) imported and queued on {hardware.slug}, "
            f"{len(report.existing)} already here, {len(report.skipped)} skipped"
        )
        for run_id, why in report.skipped.items():
            self.stderr.write(f"skipped {run_id}: {why}")
