"""Fills Run.headline_evaluation for stored runs by the rule of services.evaluations.headline_of:
the latest completed evaluation on the run's own hardware, else its latest grader failure there."""

from django.db import migrations


def fill(apps, schema_editor):
    Run = apps.get_model("submissions", "Run")
    Evaluation = apps.get_model("submissions", "Evaluation")
    finished = Evaluation.objects.filter(status__in=["done", "error"]).order_by("run_id")
    best: dict[int, tuple] = {}
    for evaluation in finished.iterator():
        rank = (
            evaluation.status == "done",
            evaluation.finished_at or evaluation.created_at,
            evaluation.pk,
        )
        key = (evaluation.run_id, evaluation.hardware_id)
        if key not in best or rank > best[key]:
            best[key] = rank
    for run in Run.objects.only("pk", "hardware_id").iterator():
        rank = best.get((run.pk, run.hardware_id))
        if rank is not None:
            Run.objects.filter(pk=run.pk).update(headline_evaluation_id=rank[2])


class Migration(migrations.Migration):
    dependencies = [("submissions", "0005_headline_figures_prices_boards")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
