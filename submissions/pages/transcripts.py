"""The run's transcript: shown in the browser, or downloaded as one standalone HTML file."""

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from submissions import selectors
from submissions.models import Run
from submissions.services.transcripts import page_html
from transcripts.render import content_security_policy


@require_GET
def transcript(request, run_id):
    return _transcript_response(request, run_id, download=False)


@require_GET
def transcript_download(request, run_id):
    return _transcript_response(request, run_id, download=True)


# The site's header on the transcript page, which is rendered outside the templates (and
# downloaded): the brand and the header's links that need no board.
SITE_LINKS = (
    ("Kernel Arena", "submissions:home"),
    ("Board", "submissions:home"),
    ("Problems", "submissions:problem-index"),
    ("Models", "submissions:model-index"),
    ("Harnesses", "submissions:harness-index"),
    ("Runs", "submissions:run-index"),
    ("Submit", "submissions:submit"),
    ("Scoring", "submissions:scoring"),
)

# The page exists either way: 202 while the transcript is being read, 422 when it could not be.
UNREAD_STATUS = {Run.TranscriptStatus.PENDING: 202, Run.TranscriptStatus.FAILED: 422}
RETRY_AFTER_S = 10


def _transcript_response(request, run_id, *, download: bool) -> HttpResponse:
    run = selectors.run_for_viewer(run_id=run_id, user=request.user)
    if run.transcript_status != Run.TranscriptStatus.PARSED:
        return _unread(request, run)
    absolute = request.build_absolute_uri
    links = [(label, absolute(reverse(name))) for label, name in SITE_LINKS]
    html = page_html(
        run, transcript_context(run, back_url=absolute(run.get_absolute_url()), site_links=links)
    )
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    # The page's own hash-based policy, repeated as a header (browsers enforce every policy they
    # get, so the header must allow exactly what the meta tag allows) and closed to framing.
    response["Content-Security-Policy"] = content_security_policy() + "; frame-ancestors 'none'"
    if download:
        response["Content-Disposition"] = f'attachment; filename="run-{run.uuid}.html"'
    return response


def _unread(request, run: Run) -> HttpResponse:
    status = UNREAD_STATUS[run.transcript_status]
    response = render(request, "submissions/transcript_pending.html", {"run": run}, status=status)
    if status == 202:
        response["Retry-After"] = str(RETRY_AFTER_S)
    return response


def transcript_context(run: Run, *, back_url: str = "", site_links=()) -> dict:
    """What the page shows of the run; ``back_url`` and ``site_links`` are absolute, so the
    downloaded file links back too (the served and downloaded pages are the same stored page)."""
    evaluation = selectors.latest_evaluation(run)
    graded = evaluation is not None and bool(evaluation.result)
    return {
        "back_url": back_url,
        "site_links": [list(link) for link in site_links],
        "title": f"{run.problem.title} · {run.language_model.display_name} · {run.harness.name}",
        "problem": run.problem.title,
        "model": run.language_model.display_name,
        "harness": run.harness.name,
        "verdict": evaluation.verdict if evaluation else None,
        "score": evaluation.score if evaluation else None,
        "solution": run.solution.code if run.solution else None,
        "evaluation": selectors.public_result(evaluation) if graded else None,
    }
