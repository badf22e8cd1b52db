from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('submissions', '0003_content_key_per_submitter'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='baselinetiming',
            name='baseline_timing_unique_key',
        ),
        migrations.AddField(
            model_name='baselinetiming',
            name='timing_protocol',
            field=models.PositiveSmallIntegerField(db_default=1, default=1),
        ),
        migrations.AddConstraint(
            model_name='baselinetiming',
            constraint=models.UniqueConstraint(fields=('problem_version', 'shape_key', 'gpu_model', 'torch_version', 'timing_protocol'), name='baseline_timing_unique_key_protocol'),
        ),
    ]
