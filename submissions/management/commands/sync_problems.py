from django.core.management.base import BaseCommand, CommandError

from submissions.services.registry import EngineError, engine_problems, sync_problems


class Command(BaseCommand):
    help = "Mirror the engine's problem deck (python -m runners problems --json) into the database."

    def handle(self, *args, **options):
        try:
            infos = engine_problems()
        except EngineError as error:
            raise CommandError(str(error)) from None
        report = sync_problems(infos=infos)
        for label, slugs in (
            ("created", report.created),
            ("updated", report.updated),
            ("deactivated", report.deactivated),
        ):
            self.stdout.write(f"{label}: {len(slugs)} {' '.join(slugs)}".rstrip())
