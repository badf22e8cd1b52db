"""Each evaluation stores its geometric-mean speedups over its visible shapes (boards read them
instead of aggregating shape rows in SQL); graded evaluations get them from their shape rows by
the rule of this migration's day, written out here so that a later change of the engine's rule
(runners.contract.run_aggregates) does not change what this migration does: the geometric mean
over the visible shapes whose speedup is a positive figure, as the boards' SQL took it."""

import math

from django.db import migrations, models


def _geomean(values) -> float | None:
    values = [value for value in values if value is not None and value > 0]
    return math.exp(sum(math.log(value) for value in values) / len(values)) if values else None


def fill_speedups(apps, schema_editor):
    Evaluation = apps.get_model("submissions", "Evaluation")
    graded = Evaluation.objects.filter(status="done").prefetch_related("shapes")
    for evaluation in graded.iterator(chunk_size=500):
        visible = [shape for shape in evaluation.shapes.all() if shape.set == "visible"]
        if not visible:
            continue
        evaluation.speedup_eager = _geomean([shape.speedup_eager for shape in visible])
        evaluation.speedup_compile = _geomean([shape.speedup_compile for shape in visible])
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
