from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Kernel Arena"

    def ready(self) -> None:
        from submissions import tasks  # noqa: F401  (services send these by name)
        from submissions.api import schema  # noqa: F401  (registers the token auth scheme)
