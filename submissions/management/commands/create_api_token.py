from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from submissions.tokens import issue_token


class Command(BaseCommand):
    help = "Issue an API token for USERNAME (created if missing); the token is the last line."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label for the token, e.g. the agent host")

    def handle(self, *args, username, name, **options):
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            self.stderr.write(f"created user {username}")
        _, plaintext = issue_token(user=user, name=name)
        self.stderr.write("store this token now; only its hash is kept")
        self.stdout.write(plaintext)
