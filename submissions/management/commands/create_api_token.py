from datetime import timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from submissions.services.accounts import token_holder
from submissions.services.tokens import issue_token


class Command(BaseCommand):
    help = "Issue an API token for USERNAME (created if missing); the token is the last line."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label for the token, e.g. the agent host")
        parser.add_argument("--days", type=int, help="Expire the token after this many days")

    def handle(self, *args, username, name, days, **options):
        user, created = token_holder(username)
        if created:
            self.stderr.write(f"created user {username}")
        expires_at = timezone.now() + timedelta(days=days) if days else None
        _, plaintext = issue_token(user=user, name=name, expires_at=expires_at)
        self.stderr.write("store this token now; only its hash is kept")
        self.stdout.write(plaintext)
