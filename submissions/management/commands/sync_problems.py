from django.core.management.base import BaseCommand, CommandError

from submissions.services.registry import (
    EngineError,
    engine_hardware,
    engine_problems,
    sync_hardware_roofs,
    sync_problems,
)


class Command(BaseCommand):
    help = (
        "Mirror the engine's problem deck (python -m runners problems --json) and the roofs of "
        "the registered hardware targets (python -m runners hardware --json) into the database."
    )

    def handle(self, *args, **options):
        try:
            infos = engine_problems()
            hardware = engine_hardware()
        except EngineError as error:
            raise CommandError(str(error)) from None
        for slug in sync_hardware_roofs(rows=hardware):
            self.stderr.write(f"hardware target {slug}: not in the engine's table, no roofs")
        report = sync_problems(infos=infos)
        for label, slugs in (
            ("created", report.created),
            ("updated", report.updated),
            ("deactivated", report.deactivated),
        ):
            self.stdout.write(f"{label}: {len(slugs)} {' '.join(slugs)}".rstrip())
