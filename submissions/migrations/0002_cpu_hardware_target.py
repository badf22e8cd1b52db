from django.db import migrations


def create_cpu_target(apps, schema_editor):
    HardwareTarget = apps.get_model("submissions", "HardwareTarget")
    HardwareTarget.objects.get_or_create(
        slug="cpu",
        defaults={
            "name": "CPU (smoke shapes)",
            "queue_name": "cpu",
            "gpu_model": "",
            "device": "cpu",
            "is_ranked": False,
        },
    )


def delete_cpu_target(apps, schema_editor):
    HardwareTarget = apps.get_model("submissions", "HardwareTarget")
    HardwareTarget.objects.filter(slug="cpu", runs__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("submissions", "0001_initial")]

    operations = [migrations.RunPython(create_cpu_target, delete_cpu_target)]
