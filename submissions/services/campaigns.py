"""Verified campaigns: the platform launches the agent CLIs itself (``arena run`` on agent
workers), with the published prompt, a declared budget and keys from the workers' settings, and
submits each run as the platform account. Such runs are *verified*: the board can show them
alone.

``start`` plans a campaign's matrix and queues one launch per cell; the agent worker's task
calls ``run_launch``. A launch the agent finished, overran or left without a solution becomes a
published run, graded like any other (its failures count: a campaign keeps every attempt); a
launch the infrastructure failed makes no run and goes back to the queue with ``retry_failed``.
"""

import contextlib
import itertools
import json
import logging
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.db import transaction

from arena_cli.harnesses import HARNESSES
from arena_cli.launch import OUTCOMES, LaunchError, run_agent
from arena_cli.runfolder import sidecar_files, transcript_files
from submissions.models import Campaign, CampaignLaunch, Run
from submissions.services import queue
from submissions.services.accounts import service_account
from submissions.services.runs import create_run, set_published
from submissions.uploads import IncomingFile, IntakeError, RunFiles

logger = logging.getLogger(__name__)

# The outcomes of the agent's own making: they become runs. The others are the infrastructure's
# (provider errors, a CLI that would not start) and count for no one.
AGENT_OUTCOMES = frozenset({"ok", "no_solution", "timeout", "template_mutated"})
# Celery's limits for a launch: the budget, the launcher's grace and its own bookkeeping.
LAUNCH_OVERHEAD_S = 300
Status = CampaignLaunch.Status


class CampaignError(Exception):
    """The campaign cannot be started; the message says why."""


MATRIX = ("harnesses", "language_models", "problems")


def save_campaign(*, campaign: Campaign, user, matrix: dict[str, list]) -> Campaign:
    """A maintainer's campaign as the admin's form left it, with its matrix (`MATRIX`: the
    harnesses, models and problems it launches); a new one is recorded as `user`'s."""
    with transaction.atomic():
        if campaign.pk is None:
            campaign.created_by = user
        campaign.save()
        for name in MATRIX:
            getattr(campaign, name).set(matrix[name])
    return campaign


def delete_campaigns(*, campaigns) -> None:
    """Campaigns and their launches; the runs they made stay (and count) like any other, no
    longer verified: the boards they count on are refreshed."""
    campaigns = list(campaigns)
    launched = Run.objects.filter(campaign_launch__campaign__in=campaigns)
    hardware_ids = list(launched.values_list("hardware_id", flat=True).distinct())
    with transaction.atomic():
        for campaign in campaigns:
            campaign.delete()
    queue.refresh_boards_on_commit(hardware_ids=hardware_ids)


def plan(campaign: Campaign) -> int:
    """Create the launches of the campaign's matrix that do not exist yet; how many."""
    harnesses = list(campaign.harnesses.all())
    unknown = [h.slug for h in harnesses if h.slug not in HARNESSES]
    if unknown:
        raise CampaignError(
            f"no launcher for harness {', '.join(unknown)} (arena run knows {', '.join(HARNESSES)})"
        )
    cells = itertools.product(
        harnesses,
        campaign.language_models.all(),
        campaign.effort_list,
        campaign.problems.all(),
        range(1, campaign.repeats + 1),
    )
    launches = [
        CampaignLaunch(
            campaign=campaign,
            harness=harness,
            language_model=model,
            effort=effort,
            problem=problem,
            repeat=repeat,
        )
        for harness, model, effort, problem, repeat in cells
    ]
    if not launches:
        raise CampaignError(
            f"{campaign}: the matrix is empty (it needs harnesses, models and problems)"
        )
    before = campaign.launches.count()
    CampaignLaunch.objects.bulk_create(launches, ignore_conflicts=True)
    return campaign.launches.count() - before


def start(campaign: Campaign) -> int:
    """Plan the campaign and send every queued launch to the agent workers; how many."""
    with transaction.atomic():
        plan(campaign)
        queued = list(campaign.launches.filter(status=Status.QUEUED).values_list("pk", flat=True))
        for launch_id in queued:
            _send(launch_id, campaign.budget_s)
    return len(queued)


def retry_failed(campaign: Campaign) -> int:
    """Send the launches the infrastructure failed again; how many."""
    with transaction.atomic():
        failed = campaign.launches.select_for_update().filter(status=Status.FAILED)
        ids = list(failed.values_list("pk", flat=True))
        CampaignLaunch.objects.filter(pk__in=ids).update(status=Status.QUEUED)
        for launch_id in ids:
            _send(launch_id, campaign.budget_s)
    return len(ids)


def _send(launch_id: int, budget_s: float) -> None:
    queue.enqueue_on_commit(
        queue.LAUNCH_AGENT, launch_id=launch_id, time_limit_s=budget_s + LAUNCH_OVERHEAD_S
    )


def run_launch(*, launch_id: int) -> CampaignLaunch | None:
    """Launch one cell on this worker and submit its run; a launch not queued (another delivery
    of the message took it) is left alone."""
    with transaction.atomic():
        claimed = CampaignLaunch.objects.select_for_update().filter(
            pk=launch_id, status=Status.QUEUED
        )
        launch = claimed.select_related("campaign").first()
        if launch is None:
            return None
        launch.status, launch.attempts = Status.RUNNING, launch.attempts + 1
        launch.save(update_fields=["status", "attempts", "updated_at"])
    campaign = launch.campaign
    folder = settings.ARENA_AGENT_RUNS_DIR / campaign.slug / f"{launch.pk}-{launch.attempts}"
    try:
        result = run_agent(
            harness=launch.harness.slug,
            model=launch.language_model.slug,
            problem=launch.problem.slug,
            out=folder,
            budget_s=campaign.budget_s,
            effort=launch.effort,
            cli=_cli(launch.harness.slug),
            gpu=settings.ARENA_AGENT_GPU,
            provider=settings.ARENA_AGENT_ENV,
        )
        detail = "; ".join(filter(None, [OUTCOMES[result.outcome][0], result.detail]))
        if result.outcome not in AGENT_OUTCOMES:
            return _finish(launch, status=Status.FAILED, outcome=result.outcome, detail=detail)
        run = _submit(launch, folder)
    except LaunchError as error:
        return _finish(launch, status=Status.FAILED, outcome="harness_error", detail=str(error))
    except IntakeError as error:  # the run folder breaks an intake limit: said, not lost
        detail = f"the run folder ({folder}) could not be stored: {error}"
        return _finish(launch, status=Status.FAILED, outcome=result.outcome, detail=detail)
    except BaseException as error:  # a launch never stays running after its worker gave up
        detail = f"the agent worker failed: {type(error).__name__}: {error}"
        _finish(launch, status=Status.FAILED, outcome="harness_error", detail=detail[:2000])
        raise
    return _finish(launch, status=Status.SUBMITTED, outcome=result.outcome, detail=detail, run=run)


def _cli(harness: str) -> str | None:
    """The harness's executable in ARENA_AGENT_CLI_DIR where it is there; else run_agent looks
    on PATH."""
    found = Path(settings.ARENA_AGENT_CLI_DIR or ".") / HARNESSES[harness].binary
    return str(found) if settings.ARENA_AGENT_CLI_DIR and found.is_file() else None


def _finish(launch: CampaignLaunch, *, status, outcome: str, detail: str, run: Run | None = None):
    launch.status, launch.outcome, launch.detail, launch.run = status, outcome, detail, run
    launch.save(update_fields=["status", "outcome", "detail", "run", "updated_at"])
    if status == Status.FAILED:
        logger.warning("campaign launch %s failed: %s (%s)", launch, outcome, detail)
    return launch


def _submit(launch: CampaignLaunch, folder: Path) -> Run:
    """The run folder stored as a published run of the platform account, queued for grading
    on the campaign's hardware."""
    campaign = launch.campaign
    metadata = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    metadata |= {"budget_s": campaign.budget_s, "campaign": campaign.slug}
    solution = folder / "solution.py"
    with contextlib.ExitStack() as stack:

        def incoming(path: Path) -> IncomingFile:
            name = path.relative_to(folder).as_posix()
            return IncomingFile(name=name, file=File(stack.enter_context(path.open("rb"))))

        files = RunFiles(
            solution=incoming(solution) if solution.is_file() else None,
            transcripts=[incoming(path) for path in transcript_files(folder)],
            metadata=metadata,
            sidecars=[incoming(path) for path in sidecar_files(folder)],
        )
        with transaction.atomic():
            run, _ = create_run(
                submitter=service_account(settings.ARENA_PLATFORM_USERNAME),
                problem=launch.problem,
                language_model=launch.language_model,
                harness=launch.harness,
                hardware=campaign.hardware,
                files=files,
                effort=launch.effort,
                # a run out of its budget may have no session log yet: it still counts
                transcript_required=False,
            )
            set_published(runs=Run.objects.filter(pk=run.pk), published=True)
    return run
