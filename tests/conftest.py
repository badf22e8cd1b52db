"""Suite-wide set-up.

The suite runs twice in CI: on the embedded default (SQLite, no broker) and against the real
PostgreSQL and Redis (DATABASE_URL, CELERY_BROKER_URL). Tests run Celery tasks eagerly in-process
either way, except those marked ``redis``, which talk to a real broker and real worker processes
and are skipped when CELERY_BROKER_URL is not a Redis URL.
"""

import os

import pytest


def _broker_url() -> str:
    return os.environ.get("CELERY_BROKER_URL", "")


@pytest.fixture(autouse=True)
def _celery_mode(request):
    if not _needs_django(request):
        yield
        return
    from arena_web.celery import app

    wants_broker = request.node.get_closest_marker("redis") is not None
    if wants_broker and not _broker_url().startswith("redis://"):
        pytest.skip("needs CELERY_BROKER_URL=redis://... (CI sets it)")
    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = not wants_broker
    app.conf.task_eager_propagates = not wants_broker
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


def _needs_django(request) -> bool:
    # Engine, transcript and launcher tests never touch Django; keep them free of its import.
    path = str(request.node.fspath)
    return not any(
        f"{os.sep}{part}{os.sep}" in path for part in ("runners", "transcripts", "launcher")
    )
