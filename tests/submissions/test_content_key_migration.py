"""Migration 0003 re-keys stored runs per submitter, both ways, losing nothing."""

import hashlib
import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from submissions.models import Run
from tests.submissions.helpers import form, loose_files, upload

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/api/v1/runs/"
BEFORE = [("submissions", "0002_cpu_hardware_target")]


def migrate(targets=None):
    """To `targets`, or back to the latest migrations (what every later test expects)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets or executor.loader.graph.leaf_nodes())


@pytest.fixture(autouse=True)
def latest_schema_afterwards():
    yield
    migrate()


def keys() -> dict[str, str]:
    return {str(uuid): key for uuid, key in Run.objects.values_list("uuid", "content_key")}


def key_before_0003(run: Run) -> str:
    """The content key as 0002-era code computed it (no submitter)."""
    identity = {
        "solution": run.solution.sha256 if run.solution else "",
        "transcripts": sorted([t.name, t.sha256] for t in run.transcript_files.all()),
        "problem": run.problem.slug,
        "model": run.language_model.slug,
        "harness": run.harness.slug,
        "hardware": run.hardware.slug,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def test_stored_keys_go_back_and_forth(api, registry):
    api.post(URL, form(registry, **loose_files()), format="multipart")
    other = loose_files(transcript=[upload("transcript.jsonl", b'{"type":"user"}\n')])
    api.post(URL, form(registry, **other), format="multipart")
    uploaded = keys()

    # computed under the latest schema: the models cannot read the 0002 tables
    expected = {str(run.uuid): key_before_0003(run) for run in Run.objects.all()}
    migrate(BEFORE)
    assert keys() == expected
    migrate()

    assert len(uploaded) == 2
    assert keys() == uploaded  # the same keys the upload path computes


def test_going_back_refuses_to_merge_two_submitters_runs(api, registry, other_api):
    api.post(URL, form(registry, **loose_files()), format="multipart")
    other_api.post(URL, form(registry, **loose_files()), format="multipart")
    uploaded = keys()

    with pytest.raises(RuntimeError, match="identical runs"):
        migrate(BEFORE)
    assert keys() == uploaded
    migrate()
