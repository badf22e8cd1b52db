"""Runs are deduplicated per submitter: the stored content keys gain the submitter.

The key is computed as in ``submissions.services.content_key`` (copied here, as a migration
must not change when that code does) from what each run stored: its solution's and transcript
files' digests and its registry slugs.
"""

import hashlib
import json

from django.db import migrations


def _key(run, submitter_pk) -> str:
    identity = {
        "submitter": submitter_pk,
        "solution": run.solution.sha256 if run.solution_id else "",
        "transcripts": sorted([t.name, t.sha256] for t in run.transcript_files.all()),
        "problem": run.problem.slug,
        "model": run.language_model.slug,
        "harness": run.harness.slug,
        "hardware": run.hardware.slug,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def rekey(apps, schema_editor, *, with_submitter=True):
    Run = apps.get_model("submissions", "Run")
    runs = Run.objects.select_related(
        "solution", "problem", "language_model", "harness", "hardware"
    ).prefetch_related("transcript_files")
    for run in runs.iterator(chunk_size=500):
        run.content_key = _key(run, run.submitter_id if with_submitter else None)
        run.save(update_fields=["content_key"])


def unkey(apps, schema_editor):
    # Keys without the submitter can collide again; the newest such run would have to go.
    # Refuse rather than delete anything.
    Run = apps.get_model("submissions", "Run")
    seen = set()
    runs = Run.objects.select_related(
        "solution", "problem", "language_model", "harness", "hardware"
    ).prefetch_related("transcript_files")
    for run in runs.iterator(chunk_size=500):
        key = _key(run, None)
        if key in seen:
            raise RuntimeError(
                "cannot reverse: two submitters uploaded identical runs, which the older keys "
                "would merge"
            )
        seen.add(key)
    rekey(apps, schema_editor, with_submitter=False)


class Migration(migrations.Migration):
    dependencies = [("submissions", "0002_cpu_hardware_target")]

    operations = [migrations.RunPython(rekey, unkey)]
