"""The run's transcript page through Django: first request (render and store) and later ones.

    .venv/bin/python bench/transcript_page_bench.py [--copies 37] [--requests 3]

Builds the 50 MB Claude Code session of `transcripts_bench.py`, stores it as a published run in a
throw-away SQLite database and media folder, parses it as the CPU worker would, then times GET
/runs/<id>/transcript/ with Django's test client (no network, no browser).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=37)
    parser.add_argument("--requests", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="arena-page-bench-") as folder:
        os.environ.update(ARENA_VAR_DIR=folder, MEDIA_ROOT=f"{folder}/media")
        os.environ.pop("DATABASE_URL", None)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena_web.settings")
        import django

        django.setup()
        run = _published_run(Path(folder), args.copies)
        _time_requests(run, args.requests)


def _published_run(folder: Path, copies: int):
    from django.core.files.base import ContentFile
    from django.core.management import call_command

    from bench.transcripts_bench import build_big_file
    from submissions.models import (
        HardwareTarget,
        Harness,
        LanguageModel,
        Problem,
        Run,
        TranscriptFile,
    )
    from submissions.services.transcripts import process_transcript

    call_command("migrate", verbosity=0)
    call_command("sync_problems", verbosity=0)
    call_command("seed_registry", verbosity=0)
    big = folder / "session.jsonl"
    build_big_file(big, copies)
    content = big.read_bytes()
    problem = Problem.objects.get(slug="softmax")
    run = Run.objects.create(
        problem=problem,
        problem_version=problem.version,
        language_model=LanguageModel.objects.first(),
        harness=Harness.objects.first(),
        hardware=HardwareTarget.objects.get(slug="h100-sxm"),
        content_key=hashlib.sha256(content).hexdigest(),
        published=True,
    )
    stored = TranscriptFile(
        run=run, name="transcript.jsonl", sha256=run.content_key, size=len(content)
    )
    stored.file.save("transcript.jsonl", ContentFile(content), save=True)
    started = time.perf_counter()
    process_transcript(run=run)
    parsed_s = time.perf_counter() - started
    print(f"input {len(content) / 1e6:.1f} MB; parse and store {parsed_s:.2f} s")
    run.refresh_from_db()
    return run


def _time_requests(run, count: int) -> None:
    from django.test import Client
    from django.urls import reverse

    client = Client(HTTP_HOST="localhost")
    url = reverse("submissions:run-transcript", kwargs={"run_id": run.uuid})
    times = []
    for _ in range(count + 1):
        started = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, response.status_code
    size = len(response.content) / 1e6
    print(f"page {size:.1f} MB; first request {times[0]:.2f} s (renders and stores)")
    print(f"later requests, median of {count}: {statistics.median(times[1:]):.3f} s")


if __name__ == "__main__":
    main()
