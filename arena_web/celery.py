"""The Celery app; its configuration is the ``CELERY_*`` block of Django settings."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena_web.settings")

app = Celery("arena_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
