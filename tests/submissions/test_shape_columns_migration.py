"""Migration 0012 fills the new shape and starter columns of stored gradings from their result."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("submissions", "0011_lineage_grades")]
AFTER = [("submissions", "0012_shape_case_library_starter")]


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


def test_stored_gradings_get_their_case_labels_speedups_and_quadrant_from_the_result():
    apps = migrate(BEFORE)
    result = {
        "shapes": [
            {"set": "visible", "index": 0, "scored": True, "speedup_library": 0.8},
            {"set": "hidden", "index": 0, "case": "edge", "scored": False},
            {"set": "hidden", "index": 1, "case": "scale-up", "starter_correct": False},
        ],
        "starter": {"quadrant": "improvement", "starter_hidden_correct": False},
    }
    graded = _evaluation(apps, result=result)
    shapes = [("visible", 0), ("hidden", 0), ("hidden", 1)]
    for shape_set, index in shapes:
        apps.get_model("submissions", "ShapeResult").objects.create(
            evaluation=graded, set=shape_set, index=index, params={}
        )
    queued = _evaluation(apps, status="queued", result={})

    apps = migrate(AFTER)
    Evaluation = apps.get_model("submissions", "Evaluation")
    ShapeResult = apps.get_model("submissions", "ShapeResult")
    rows = ShapeResult.objects.filter(evaluation_id=graded.pk).order_by("set", "index")
    assert [(r.case, r.scored, r.speedup_library, r.starter_correct) for r in rows] == [
        ("edge", False, None, None),
        ("scale-up", None, None, False),
        ("", True, 0.8, None),
    ]
    graded = Evaluation.objects.get(pk=graded.pk)
    assert (graded.starter_quadrant, graded.starter_hidden_correct) == ("improvement", False)
    assert Evaluation.objects.get(pk=queued.pk).starter_quadrant == ""


def _evaluation(apps, *, result: dict, status: str = "done"):
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
    run = get("Run").objects.create(
        problem=problem,
        problem_version="v1",
        language_model=model,
        harness=harness,
        hardware=hardware,
        content_key=status,
    )
    verdict = "ok" if status == "done" else ""
    return get("Evaluation").objects.create(
        run=run, hardware=hardware, status=status, verdict=verdict, result=result
    )
