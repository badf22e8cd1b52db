"""A verified campaign end to end: the admin's matrix launched by the agent task with the real
Claude Code CLI (the npm package `make agents` installs) against the scripted model server, the
run submitted as the platform account and graded by the real engine on the CPU. (The CPU target
is never ranked; the board's verified tier is tested in tests/boards/test_budgets.py.)"""

import hashlib
import json
from pathlib import Path

import pytest

from arena_cli.harnesses import HARNESSES
from runners.pack import render_prompt
from runners.problem import load_problem
from submissions.models import (
    Campaign,
    CampaignLaunch,
    HardwareTarget,
    Harness,
    LanguageModel,
    Run,
)
from submissions.models import Problem as ProblemRow
from submissions.services import campaigns
from submissions.services.registry import engine_problems, seed_registry, sync_problems
from tests.factories import make_superuser
from tests.launcher.launcher_support import CHECK, HONEST, installed_cli
from tests.launcher.model_server import ScriptedModel

pytestmark = pytest.mark.django_db(transaction=True)
Status = CampaignLaunch.Status


def writes_and_checks(workspace: Path):
    """An agent that reads the prompt, writes a correct solution, runs the check and stops."""
    return [
        [{"tool": "Read", "input": {"file_path": str(workspace / "PROMPT.md")}}],
        [
            {
                "tool": "Write",
                "input": {"file_path": str(workspace / "solution.py"), "content": HONEST},
            }
        ],
        [{"tool": "Bash", "input": {"command": CHECK, "description": "check the solution"}}],
        [{"text": "solution.py passes the check."}],
    ]


@pytest.fixture
def campaign(settings, tmp_path) -> Campaign:
    settings.ARENA_AGENT_RUNS_DIR = tmp_path / "agent-runs"
    settings.ARENA_AGENT_CLI_DIR = str(Path(installed_cli("claude", "ARENA_CLAUDE_CLI")).parent)
    seed_registry()
    sync_problems(infos=engine_problems())
    cpu = HardwareTarget.objects.get(slug="cpu")  # never ranked: tests/boards/test_budgets.py
    found = Campaign.objects.create(slug="nightly", name="Nightly", hardware=cpu, budget_s=120)
    found.harnesses.add(Harness.objects.get(slug="claude-code"))
    found.language_models.add(LanguageModel.objects.get(slug="claude-sonnet-4-5"))
    found.problems.add(ProblemRow.objects.get(slug="row_sum"))
    return found


def provider(model: ScriptedModel) -> dict[str, str]:
    # as a maintainer's settings would hold them; the CLI gives up at once on a failed request
    return {
        "ANTHROPIC_BASE_URL": model.url,
        "ANTHROPIC_API_KEY": "sk-scripted",
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def test_a_campaign_launch_becomes_a_verified_graded_run_on_the_board(campaign, settings, client):
    with ScriptedModel(writes_and_checks) as model:
        settings.ARENA_AGENT_ENV = provider(model)
        assert campaigns.start(campaign) == 1  # Celery runs eagerly here: launched on commit

    launch = CampaignLaunch.objects.get()
    assert (launch.status, launch.outcome, launch.attempts) == (Status.SUBMITTED, "ok", 1)
    run = launch.run
    assert run.published and run.submitter.username == settings.ARENA_PLATFORM_USERNAME
    assert not run.submitter.has_usable_password()
    assert run.verified_campaign == campaign
    assert (run.budget_s, run.metadata["campaign"]) == (120, "nightly")
    statement = render_prompt(load_problem("row_sum"))
    assert run.prompt_hash == hashlib.sha256(statement.encode()).hexdigest()
    assert not [flag for flag in run.flags if flag["code"] == "prompt_differs"]
    assert run.headline_evaluation.verdict == "ok", run.headline_evaluation.reason
    assert [t.name for t in run.transcript_files.all()] == [f"{run.metadata['session_id']}.jsonl"]
    # the CLI found the scripted server through the settings alone (this process's environment
    # names no provider), and the key is nowhere in what the run stores
    assert model.requests
    assert "sk-scripted" not in json.dumps(run.metadata)

    page = client.get(run.get_absolute_url()).content.decode()
    assert '<span class="badge verified"' in page
    assert "launched by Kernel Arena with the published prompt and a 2 min budget" in page
    assert client.get(f"/api/v1/runs/{run.uuid}/").json()["verified_campaign"] == "nightly"


def test_an_infrastructure_failure_makes_no_run_and_is_launched_again(campaign, settings):
    with ScriptedModel(lambda workspace: [[{"status": 429}]]) as limited:
        settings.ARENA_AGENT_ENV = provider(limited)
        campaigns.start(campaign)
    launch = CampaignLaunch.objects.get()
    assert (launch.status, launch.outcome, launch.run) == (
        Status.FAILED,
        "provider_rate_limited",
        None,
    )
    assert "rate limit" in launch.detail

    with ScriptedModel(writes_and_checks) as model:
        settings.ARENA_AGENT_ENV = provider(model)
        assert campaigns.retry_failed(campaign) == 1
    launch.refresh_from_db()
    assert (launch.status, launch.attempts) == (Status.SUBMITTED, 2)
    assert launch.run.verified_campaign == campaign
    # a launch already taken is not launched twice (a redelivered message)
    assert campaigns.run_launch(launch_id=launch.pk) is None


def test_a_run_folder_the_intake_refuses_fails_its_launch_with_the_reason(campaign, settings):
    settings.ARENA_MAX_SOLUTION_BYTES = 10
    with ScriptedModel(writes_and_checks) as model:
        settings.ARENA_AGENT_ENV = provider(model)
        campaigns.start(campaign)

    launch = CampaignLaunch.objects.get()
    assert (launch.status, launch.outcome, launch.run) == (Status.FAILED, "ok", None)
    assert "could not be stored: The solution is" in launch.detail
    assert "the limit is 10" in launch.detail
    assert not Run.objects.exists()
    folder = settings.ARENA_AGENT_RUNS_DIR / "nightly" / f"{launch.pk}-1"
    assert (folder / "solution.py").read_text() == HONEST  # the run folder is kept


def test_a_campaign_needs_a_launchable_matrix(campaign):
    campaign.harnesses.set([Harness.objects.get(slug="claude-code-print")])
    with pytest.raises(campaigns.CampaignError, match="no launcher for harness claude-code-print"):
        campaigns.plan(campaign)
    campaign.harnesses.set([])
    with pytest.raises(campaigns.CampaignError, match="the matrix is empty"):
        campaigns.plan(campaign)


def test_the_admin_starts_a_campaign_only_with_an_agent_worker_listening(campaign, client):
    client.force_login(make_superuser())
    url = "/admin/submissions/campaign/"
    response = client.post(url, {"action": "start", "_selected_action": [campaign.pk]}, follow=True)
    assert "No agent worker listens on the &#x27;agents&#x27; queue" in response.content.decode()
    assert not CampaignLaunch.objects.exists()
    assert client.get(f"{url}{campaign.pk}/change/").status_code == 200


def test_every_cli_the_launcher_knows_is_a_registered_harness(db):
    """`arena run --submit` and campaigns submit the launcher's harness name as the registry's
    harness slug."""
    seed_registry()
    assert set(HARNESSES) <= set(Harness.objects.values_list("slug", flat=True))
