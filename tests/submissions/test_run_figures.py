"""A run's tokens, turns, wall time and cost come from its transcript when the metadata lacks
them, priced from the registry when the CLI reports no cost; each figure says its source."""

import datetime
from pathlib import Path

import pytest
from django.core.management import call_command

from submissions.models import ModelPrice, Run
from submissions.services.figures import refresh_figures
from tests.submissions.helpers import form, loose_files, upload

pytestmark = pytest.mark.django_db
SAMPLES = Path(__file__).parent.parent / "transcripts" / "samples"
URL = "/api/v1/runs/"


@pytest.fixture
def send(api, registry, monkeypatch, django_capture_on_commit_callbacks):
    """Uploads with the transcript parsed at commit, as a worker would; no grading."""
    monkeypatch.setattr("submissions.services.runs.enqueue_evaluation", lambda **kw: None)

    def post(files: dict, **fields) -> Run:
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post(URL, form(registry, **files) | fields, format="multipart")
        assert response.status_code == 201, response.content
        return Run.objects.get(uuid=response.json()["id"])

    return post


def sample(name: str) -> dict:
    return loose_files(transcript=[upload(name, (SAMPLES / name).read_bytes())])


def price(registry, **rates) -> ModelPrice:
    defaults = {"input_usd_per_mtok": 3.0, "cached_input_usd_per_mtok": 0.3}
    return ModelPrice.objects.create(
        language_model=registry["model"],
        effective_from=datetime.date(2025, 1, 1),
        output_usd_per_mtok=15.0,
        **(defaults | rates),
    )


def test_figures_the_cli_reported_are_taken_with_their_source(send, registry):
    run = send(sample("claude-stream-json-task-subagent.jsonl"))
    assert (run.input_tokens, run.cached_input_tokens, run.output_tokens) == (
        236784,
        191182,
        4795,
    )
    assert (run.turns, run.wall_time_s, run.cost_usd) == (2, 170.911, 0.0999967)
    assert run.figure_sources["cost_usd"] == "cli"
    assert run.figure_sources["input_tokens"] == "cli"


def test_what_the_metadata_says_wins_over_the_transcript(send, registry):
    run = send(
        sample("claude-stream-json-task-subagent.jsonl"), metadata='{"turns": 41, "cost_usd": 2.5}'
    )
    assert (run.turns, run.cost_usd) == (41, 2.5)
    assert run.figure_sources["turns"] == run.figure_sources["cost_usd"] == "metadata"
    assert run.output_tokens == 4795 and run.figure_sources["output_tokens"] == "cli"


def test_a_transcript_without_a_cost_is_priced_from_the_registry(send, registry):
    price(registry)
    run = send(sample("codex-exec-json-command.jsonl"))
    # 6087 prompt tokens of which 5120 cached, 204 out
    expected = ((6087 - 5120) * 3.0 + 5120 * 0.3 + 204 * 15.0) / 1e6
    assert run.cost_usd == pytest.approx(expected)
    assert run.figure_sources["cost_usd"] == "price:2025-01-01"
    assert run.figure_sources["input_tokens"] == "transcript"


def test_a_price_without_a_cached_rate_bills_cache_reads_as_input(send, registry):
    price(registry, cached_input_usd_per_mtok=None)
    run = send(sample("codex-exec-json-command.jsonl"))
    assert run.cost_usd == pytest.approx((6087 * 3.0 + 204 * 15.0) / 1e6)


def test_prices_dated_after_the_run_do_not_apply(send, registry):
    ModelPrice.objects.create(
        language_model=registry["model"],
        effective_from=datetime.date(2999, 1, 1),
        input_usd_per_mtok=3.0,
        output_usd_per_mtok=15.0,
    )
    run = send(sample("codex-exec-json-command.jsonl"))
    assert run.cost_usd is None and "cost_usd" not in run.figure_sources


def test_an_unreadable_transcript_still_prices_the_metadatas_tokens(send, registry):
    price(registry)
    files = loose_files(transcript=[upload("t.jsonl", b"not a transcript\n")])
    run = send(files, metadata='{"input_tokens": 1000000, "output_tokens": 1000}')
    assert run.transcript_status == Run.TranscriptStatus.FAILED
    assert run.cost_usd == pytest.approx(3.0 + 0.015)
    assert run.figure_sources["input_tokens"] == "metadata"


def test_reparsing_replaces_transcript_figures_and_keeps_metadata_ones(send, registry):
    run = send(sample("claude-stream-json-task-subagent.jsonl"), metadata='{"turns": 9}')
    refresh_figures(run=run, session=None)
    run.refresh_from_db()
    assert run.turns == 9 and run.input_tokens is None
    assert run.figure_sources == {"turns": "metadata"}


def test_the_command_prices_stored_runs_after_a_price_is_added(send, registry):
    run = send(sample("codex-exec-json-command.jsonl"))
    assert run.cost_usd is None
    price(registry)
    call_command("refresh_run_figures")
    run.refresh_from_db()
    assert run.cost_usd == pytest.approx(((6087 - 5120) * 3.0 + 5120 * 0.3 + 204 * 15.0) / 1e6)
    assert run.output_tokens == 204
