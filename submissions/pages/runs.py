"""A run: its headline result and rank, every evaluation with gates and shapes, the solution."""

import json

from django.shortcuts import render
from django.views.decorators.http import require_GET

from submissions import boards, selectors
from submissions.pages import figures
from submissions.pages.rendering import sidecar_html, solution_html


@require_GET
def run_index(request):
    return render(
        request, "submissions/run_index.html", {"runs": selectors.recent_published_runs()}
    )


@require_GET
def run_detail(request, run_id):
    run = selectors.run_for_viewer(run_id=run_id, user=request.user)
    reports = selectors.evaluation_reports(run)
    curve = selectors.lineage_curve(run)
    context = {
        "run": run,
        "rank": boards.run_rank(run=run),
        "reports": reports,
        "headline": _headline(run, reports),
        "history": figures.evaluation_history(reports) if len(reports) > 1 else None,
        "curve": curve,
        "convergence": figures.convergence(curve) if curve and curve.points else None,
        "metadata_json": json.dumps(run.metadata, indent=2, ensure_ascii=False),
        "spread": selectors.timing_spread(run),
        "solution_html": solution_html(run.solution) if run.solution else "",
        "sidecars": _sidecars(run),
    }
    return render(request, "submissions/run_detail.html", context)


def _sidecars(run) -> list[tuple]:
    """(sidecar, highlighted HTML) of each native source beside solution.py."""
    files = run.solution.sidecar_files if run.solution else []
    return [(sidecar, sidecar_html(sidecar)) for sidecar in files]


def _headline(run, reports):
    return next((r for r in reports if r.evaluation.pk == run.headline_evaluation_id), None)
