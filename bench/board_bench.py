"""Board pages at 10,000 runs: median and p95 server time, and SQL queries, per page.

    createdb -h 127.0.0.1 -U postgres arena_bench
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/arena_bench \\
        .venv/bin/python bench/board_bench.py [--runs 10000] [--requests 30] [--hardware h100-sxm]

Runs with production settings (DEBUG off, static files collected into a temporary folder).
Migrates the database and, unless it already holds that many synthetic runs, mirrors the problem
deck and writes them (``synthetic_history.write_bench``); PostgreSQL then ANALYZEs the tables.
Requests each page through Django's test client (the whole server side: URL routing, middleware,
selectors, templates; no network): one warm-up request, one that counts queries, then the timed
ones. The board snapshot is recomputed once first, as the platform does after each grading, and
never during the timed requests.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--hardware", default="h100-sxm")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL database made for the benchmark")
    with tempfile.TemporaryDirectory(prefix="arena-board-bench-") as static_root:
        _production_settings(static_root)
        _prepare(args.runs, args.hardware)
        _report(_pages(args.hardware), args.requests)


def _production_settings(static_root: str) -> None:
    os.environ.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(32),
        ALLOWED_HOSTS="localhost",
        SECURE_SSL_REDIRECT="0",
        STATIC_ROOT=static_root,
        DJANGO_SETTINGS_MODULE="arena_web.settings",
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("collectstatic", interactive=False, verbosity=0)


def _report(pages: dict[str, str], requests: int) -> None:
    print(f"{'page':<10} {'median ms':>10} {'p95 ms':>8} {'queries':>8}  url")
    for name, url in pages.items():
        _measure(name, url, requests)


def _prepare(runs: int, hardware: str) -> None:
    from django.core.management import call_command
    from django.db import connection

    from bench.synthetic_history import synthetic_runs, write_bench
    from submissions.boards import refresh_board
    from submissions.models import HardwareTarget, Run, ShapeResult

    call_command("migrate", verbosity=0)
    if synthetic_runs().count() != runs:
        call_command("sync_problems", verbosity=0)
        write_bench(runs=runs)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # as autovacuum would after a bulk load
    started = time.perf_counter()
    refresh_board(hardware_id=HardwareTarget.objects.get(slug=hardware).pk)
    took = time.perf_counter() - started
    print(f"database: {Run.objects.count()} runs, {ShapeResult.objects.count()} shape results")
    print(f"board snapshot of {hardware} recomputed in {took * 1000:.0f} ms (once, not per page)")


def _pages(hardware: str) -> dict[str, str]:
    """The four pages of issue 10, on their fullest instances, then the other board pages."""
    from django.db.models import Count
    from django.urls import reverse

    from submissions.models import LanguageModel, Problem, Run

    runs = Run.objects.filter(hardware__slug=hardware, published=True)
    busiest = Problem.objects.annotate(n=Count("runs")).order_by("-n").first()
    regraded = runs.annotate(n=Count("evaluations")).filter(n__gt=1)
    run = regraded.filter(headline_evaluation__verdict="ok").order_by("pk").first()
    model = LanguageModel.objects.annotate(n=Count("runs")).order_by("-n").first()
    board = {"hardware": hardware}
    return {
        "board": reverse("submissions:board", kwargs=board),
        "matrix": reverse("submissions:matrix", kwargs=board),
        "problem": reverse("submissions:problem-detail", kwargs={"slug": busiest.slug})
        + f"?hardware={hardware}",
        "run": run.get_absolute_url(),
        "home": reverse("submissions:home"),
        "filtered": reverse("submissions:board", kwargs=board) + "?harness=codex-cli",
        "charts": reverse("submissions:charts", kwargs=board),
        "model": reverse("submissions:model-detail", kwargs={"slug": model.slug}),
    }


def _measure(name: str, url: str, count: int) -> None:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="localhost")
    _get(client, url)
    connection.queries_log.clear()  # a full log (it keeps the last 9,000) would count nothing
    with CaptureQueriesContext(connection) as captured:
        _get(client, url)
    queries = len(captured)  # now: each later request empties the log it reads from
    times = []
    for _ in range(count):
        started = time.perf_counter()
        _get(client, url)
        times.append((time.perf_counter() - started) * 1000)
    p95 = statistics.quantiles(times, n=20)[-1] if count > 1 else times[0]
    median = statistics.median(times)
    print(f"{name:<10} {median:>10.1f} {p95:>8.1f} {queries:>8}  {url}")


def _get(client, url: str) -> None:
    response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"{url}: HTTP {response.status_code}")


if __name__ == "__main__":
    main()
