from django.core.management.base import BaseCommand

from submissions.services.registry import seed_registry


class Command(BaseCommand):
    help = "Register example language models, harnesses and hardware targets (idempotent)."

    def handle(self, *args, **options):
        counts = seed_registry()
        self.stdout.write(", ".join(f"{count} {kind}" for kind, count in counts.items()))
