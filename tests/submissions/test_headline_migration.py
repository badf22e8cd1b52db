"""Migration 0006 fills Run.headline_evaluation for runs stored before the column existed."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("submissions", "0005_headline_figures_prices_boards")]
AFTER = [("submissions", "0006_fill_headline_evaluation")]


def migrate(targets=None):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets or executor.loader.graph.leaf_nodes())
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps if targets else None


@pytest.fixture(autouse=True)
def latest_schema_afterwards():
    yield
    migrate()


def test_stored_runs_get_the_headline_the_services_would_give_them():
    apps = migrate(BEFORE)
    models = {name: apps.get_model("submissions", name) for name in ("Run", "Evaluation")}
    run = _stored_run(apps)
    now = timezone.now()

    def evaluation(status, minutes_ago, hardware=None):
        return models["Evaluation"].objects.create(
            run=run,
            hardware=hardware or run.hardware,
            status=status,
            verdict="ok" if status == "done" else "infra_error",
            finished_at=now - timedelta(minutes=minutes_ago),
        )

    evaluation("done", 30)
    graded = evaluation("done", 20)
    evaluation("error", 5)  # a later grader failure does not replace a grade
    other = run.hardware.__class__.objects.create(slug="h200", name="H200", queue_name="gpu.h200")
    evaluation("done", 1, hardware=other)  # nor does a grade on another target
    bare = _stored_run(apps, content_key="other")

    apps = migrate(AFTER)
    Run = apps.get_model("submissions", "Run")
    assert Run.objects.get(pk=run.pk).headline_evaluation_id == graded.pk
    assert Run.objects.get(pk=bare.pk).headline_evaluation_id is None


def _stored_run(apps, content_key: str = "key"):
    def get(name):
        return apps.get_model("submissions", name)

    problem, _ = get("Problem").objects.get_or_create(
        slug="softmax", defaults={"title": "Softmax", "version": "v1", "synced_at": timezone.now()}
    )
    hardware, _ = get("HardwareTarget").objects.get_or_create(
        slug="h100-sxm", defaults={"name": "H100", "queue_name": "gpu.h100-sxm"}
    )
    model, _ = get("LanguageModel").objects.get_or_create(slug="m", defaults={"display_name": "M"})
    harness, _ = get("Harness").objects.get_or_create(slug="h", defaults={"name": "H"})
    return get("Run").objects.create(
        problem=problem,
        problem_version="v1",
        language_model=model,
        harness=harness,
        hardware=hardware,
        content_key=content_key,
    )
