"""Runs are deduplicated per submitter: the stored content keys gain the submitter.

The key is computed as in ``submissions.services.content_key`` (copied here, as a migration
must not change when that code does) from what each run stored: its solution's and transcript
files' digests and its registry slugs.
"""

import hashlib
import json

from django.db import migrations


def _key(run, *, with_submitter: bool) -> str:
    identity = {
        "solution": run.solution.sha256 if run.solution_id else "",
        "transcripts": sorted([t.name, t.sha256] for t in run.transcript_files.all()),
        "problem": run.problem.slug,
        "model": run.language_model.slug,
        "harness": run.harness.slug,
        "hardware": run.hardware.slug,
    }
    if with_submitter:  # 0002's keys had no submitter field at all
        identity["submitter"] = run.submitter_id
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _runs(apps):
    Run = apps.get_model("submissions", "Run")
    return Run, Run.objects.select_related(
        "solution", "problem", "language_model", "harness", "hardware"
    ).prefetch_related("transcript_files")


def _rekey(apps, *, with_submitter: bool) -> None:
    Run, runs = _runs(apps)
    batch = []
    for run in runs.iterator(chunk_size=500):
        run.content_key = _key(run, with_submitter=with_submitter)
        batch.append(run)
        if len(batch) == 500:
            Run.objects.bulk_update(batch, ["content_key"])
            batch = []
    Run.objects.bulk_update(batch, ["content_key"])


def forwards(apps, schema_editor):
    _rekey(apps, with_submitter=True)


def backwards(apps, schema_editor):
    # Without the submitter, two users' identical runs would share a key, which the unique
    # constraint forbids; refuse rather than delete either.
    _, runs = _runs(apps)
    seen = set()
    for run in runs.iterator(chunk_size=500):
        key = _key(run, with_submitter=False)
        if key in seen:
            raise RuntimeError(
                "cannot reverse: two submitters uploaded identical runs, which the older keys "
                "would merge"
            )
        seen.add(key)
    _rekey(apps, with_submitter=False)


class Migration(migrations.Migration):
    dependencies = [("submissions", "0002_cpu_hardware_target")]

    operations = [migrations.RunPython(forwards, backwards)]
