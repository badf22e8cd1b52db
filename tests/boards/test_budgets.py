"""Budgets and the verified tier on the board: each run's declared wall budget and whether a
verified campaign launched it, as filters (page and API), and the notice when a ranking mixes
budgets."""

import pytest
from django.http import QueryDict

from submissions.boards import snapshot
from submissions.boards.board import BoardFilters, board, budget_choices
from submissions.models import Campaign, CampaignLaunch

pytestmark = pytest.mark.django_db


def launched(arena, run) -> CampaignLaunch:
    """Mark ``run`` as made by a verified campaign's launch, as services.campaigns does."""
    campaign, _ = Campaign.objects.get_or_create(
        slug="nightly", defaults={"name": "Nightly", "hardware": arena.h100, "budget_s": 2700}
    )
    return CampaignLaunch.objects.create(
        campaign=campaign,
        harness=run.harness,
        language_model=run.language_model,
        problem=run.problem,
        repeat=CampaignLaunch.objects.count() + 1,
        status=CampaignLaunch.Status.SUBMITTED,
        outcome="ok",
        run=run,
    )


def test_budget_and_verified_filters_round_trip_through_the_query():
    filters = BoardFilters.from_query(QueryDict("budget=2700&budget=none&verified=1"))

    assert filters == BoardFilters(budget=("2700", "none"), verified=True)
    assert filters.to_query() == "budget=2700&budget=none&verified=1"
    assert BoardFilters.from_query(QueryDict(filters.to_query())) == filters
    assert not BoardFilters.from_query(QueryDict("verified=0")).verified


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("2700", "45 min"),
        ("7200", "2 h"),
        ("5400", "1 h 30 min"),
        ("90", "90 s"),
        ("none", "no declared budget"),
    ],
)
def test_budget_labels(key, label):
    assert snapshot.budget_label(key) == label


def test_a_ranking_that_mixes_budgets_says_so_and_the_filter_separates_them(arena, grade):
    grade(score=0.9, budget_s=7200.0)
    grade(score=0.8, budget_s=7200.0, problem="gemm")
    grade(model="claude", score=0.3, budget_s=2700.0)
    grade(model="claude", harness="claude_code", score=0.2)  # declared none
    snapshot.refresh_board(hardware_id=arena.h100.pk)

    everything = board(hardware=arena.h100)
    assert everything.mixes_budgets
    assert [(b.key, b.runs, b.label) for b in everything.budgets] == [
        ("2700", 1, "45 min"),
        ("7200", 2, "2 h"),
        ("none", 1, "no declared budget"),
    ]

    short = board(hardware=arena.h100, filters=BoardFilters(budget=("2700",)))
    assert [row.config_key for row in short.rows] == ["claude-opus-4-5/codex-cli/"]
    assert not short.mixes_budgets
    undeclared = board(hardware=arena.h100, filters=BoardFilters(budget=("none",)))
    assert [row.harness_slug for row in undeclared.rows] == ["claude-code"]
    assert budget_choices() == [("2700", "45 min"), ("7200", "2 h"), ("none", "no declared budget")]


def test_the_verified_filter_keeps_the_runs_a_campaign_launched(arena, grade):
    uploaded = grade(score=0.9, budget_s=2700.0)
    verified = grade(model="claude", score=0.4, budget_s=2700.0)
    launched(arena, verified)
    snapshot.refresh_board(hardware_id=arena.h100.pk)

    records, _ = snapshot.stored_records(hardware=arena.h100)
    flags = dict(zip(records.runs.uuid.tolist(), records.runs.verified.tolist(), strict=True))
    assert flags == {str(uploaded.uuid): False, str(verified.uuid): True}
    only = board(hardware=arena.h100, filters=BoardFilters(verified=True))
    assert [row.model_slug for row in only.rows] == ["claude-opus-4-5"]
    assert only.rows[0].runs == 1


def test_the_board_page_and_api_offer_the_filters_and_the_notice(arena, grade, client):
    grade(score=0.9, budget_s=7200.0)
    verified = grade(model="claude", score=0.3, budget_s=2700.0)
    launched(arena, verified)
    snapshot.refresh_board(hardware_id=arena.h100.pk)

    page = client.get("/boards/h100-sxm/").content.decode()
    assert "This ranking mixes wall budgets: 45 min (1 run), 2 h (1 run)." in page
    assert '<option value="2700">45 min</option>' in page
    assert 'name="verified" value="1"' in page
    filtered = client.get("/boards/h100-sxm/?verified=1").content.decode()
    assert "mixes wall budgets" not in filtered
    assert 'name="verified" value="1" checked' in filtered
    assert '<td class="config"><a href="/models/claude-opus-4-5/">' in filtered
    assert '<td class="config"><a href="/models/gpt-5/">' not in filtered

    data = client.get("/api/v1/boards/h100-sxm/", {"budget": "7200"}).json()
    assert [row["model_slug"] for row in data["rows"]] == ["gpt-5"]
    assert data["filters"]["budget"] == ["7200"]
    assert data["budgets"] == [{"key": "7200", "runs": 1}]
    verified_only = client.get("/api/v1/boards/h100-sxm/", {"verified": "true"}).json()
    assert [row["model_slug"] for row in verified_only["rows"]] == ["claude-opus-4-5"]
