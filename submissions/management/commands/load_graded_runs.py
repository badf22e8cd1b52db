import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from submissions.services.imports import RunImportError, load_graded


class Command(BaseCommand):
    help = (
        "Load runs another benchmark publishes with our grades of them, made on GPU workers "
        "elsewhere (bench/peer_board.py writes the file; `make demo` loads "
        "submissions/demo/kernelbench_hard_h100.json). Nothing is queued; loading twice adds "
        "only what is new."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="a graded-runs file (JSON)")

    def handle(self, *args, file, **options):
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except OSError as error:
            raise CommandError(f"{file}: {error.strerror}") from None
        except ValueError as error:
            raise CommandError(f"{file}: not JSON ({error})") from None
        if not isinstance(data, dict):
            raise CommandError(f"{file}: not a graded-runs file (expected a JSON object)")
        try:
            report = load_graded(data)
        except RunImportError as error:
            raise CommandError(f"{file}: {error}") from None
        except (KeyError, TypeError) as error:
            raise CommandError(f"{file}: a run or problem lacks {error}") from None
        self.stdout.write(
            f"{len(report.created)} graded run(s) loaded, {len(report.existing)} already here"
        )
