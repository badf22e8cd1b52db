from django.core.management.base import BaseCommand

from submissions.models import Run
from submissions.services.figures import refresh_figures
from submissions.services.transcripts import load_session


class Command(BaseCommand):
    help = (
        "Recompute every run's tokens, turns, wall time and cost from its metadata, stored "
        "transcript and the registry's prices (after a price change, or for runs stored before "
        "figures were read from transcripts)."
    )

    def handle(self, *args, **options):
        count = 0
        for run in Run.objects.order_by("pk").iterator(chunk_size=200):
            parsed = run.transcript_status == Run.TranscriptStatus.PARSED
            refresh_figures(run=run, session=load_session(run) if parsed else None)
            count += 1
        self.stdout.write(f"figures refreshed on {count} runs")
