"""Stores what the engine's result already carried per shape (held-out case, scored, speedup
over the library and over the starter, the starter's correctness) and per grading (the starter
comparison of kernel-to-kernel problems) in columns, and fills them for stored gradings from
their result; the cached baselines gain the library's and the starter's timings."""

from django.db import migrations, models

SHAPE_FIELDS = ("case", "scored", "speedup_library", "speedup_starter", "starter_correct")


def fill(apps, schema_editor):
    Evaluation = apps.get_model("submissions", "Evaluation")
    ShapeResult = apps.get_model("submissions", "ShapeResult")
    graded = Evaluation.objects.filter(status="done").exclude(result={})
    for evaluation in graded.only("pk", "result").iterator():
        _fill_evaluation(Evaluation, ShapeResult, evaluation)


def _fill_evaluation(Evaluation, ShapeResult, evaluation) -> None:
    starter = evaluation.result.get("starter") or {}
    Evaluation.objects.filter(pk=evaluation.pk).update(
        starter_quadrant=starter.get("quadrant") or "",
        starter_hidden_correct=starter.get("starter_hidden_correct"),
        conditional_hidden_correct=starter.get("conditional_hidden_correct"),
    )
    stored = {(s.get("set"), s.get("index")): s for s in evaluation.result.get("shapes", [])}
    rows = list(ShapeResult.objects.filter(evaluation_id=evaluation.pk))
    for row in rows:
        shape = stored.get((row.set, row.index), {})
        for name in SHAPE_FIELDS:
            setattr(row, name, shape.get(name))
        row.case = (row.case or "")[:64]
    ShapeResult.objects.bulk_update(rows, SHAPE_FIELDS)


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0011_lineage_grades"),
    ]

    operations = [
        migrations.AddField(
            model_name="baselinetiming",
            name="library",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="baselinetiming",
            name="starter",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="baselinetiming",
            name="starter_correct",
            field=models.BooleanField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="conditional_hidden_correct",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="starter_hidden_correct",
            field=models.BooleanField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="starter_quadrant",
            field=models.CharField(
                blank=True,
                choices=[
                    ("both_pass", "Both pass"),
                    ("regression", "Regression vs starter"),
                    ("improvement", "Improvement over starter"),
                    ("both_fail", "Both fail"),
                ],
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="shaperesult",
            name="case",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="shaperesult",
            name="scored",
            field=models.BooleanField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="shaperesult",
            name="speedup_library",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="shaperesult",
            name="speedup_starter",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="shaperesult",
            name="starter_correct",
            field=models.BooleanField(blank=True, null=True),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
