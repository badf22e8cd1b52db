"""Each evaluation stores its geometric-mean speedups over its visible shapes (boards read them
instead of aggregating shape rows in SQL); graded evaluations get them from their shape rows by
the engine's rule (runners.contract.run_aggregates)."""

from django.db import migrations, models

from runners.contract import run_aggregates


def fill_speedups(apps, schema_editor):
    Evaluation = apps.get_model("submissions", "Evaluation")
    graded = Evaluation.objects.filter(status="done").prefetch_related("shapes")
    for evaluation in graded.iterator(chunk_size=500):
        shapes = list(evaluation.shapes.all())
        if not shapes:
            continue
        figures = run_aggregates(shapes, front="visible", ok=True, by_speedup=False)
        evaluation.speedup_eager = figures.speedup_eager
        evaluation.speedup_compile = figures.speedup_compile
        evaluation.save(update_fields=["speedup_eager", "speedup_compile"])


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0019_transcript_resends"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="speedup_compile",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="evaluation",
            name="speedup_eager",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.RunPython(fill_speedups, migrations.RunPython.noop),
    ]
