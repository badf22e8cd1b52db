"""The runs: the list of every published run, and a run's page with its headline result and
rank, every evaluation with gates and shapes, the solution."""

import json

from django.core.paginator import Paginator
from django.db.models import F
from django.shortcuts import render
from django.views.decorators.http import require_GET

from submissions import boards, selectors
from submissions.filters import RunFilter
from submissions.models import Run
from submissions.pages import figures
from submissions.pages.rendering import sidecar_html, solution_html

RUNS_PER_PAGE = 50
# ?sort= key -> the ordering it means (a leading "-" in the query reverses it); newest first
# breaks ties, and runs without a grade sort last either way.
RUN_ORDERS = {
    "uploaded": F("created_at"),
    "score": F("headline_evaluation__score"),
    "hidden": F("headline_evaluation__hidden_score"),
    "problem": F("problem__slug"),
    "model": F("language_model__display_name"),
}


@require_GET
def run_index(request):
    """Every published run: verdict, scores, problem and configuration, filtered by the API's
    own filters (``?problem=&model=&harness=&effort=&hardware=&verdict=``), sorted and paged,
    all in the URL."""
    chosen = RunFilter(request.GET, queryset=selectors.published_runs_listing())
    runs = chosen.qs if chosen.is_valid() else Run.objects.none()
    sort = request.GET.get("sort", "-uploaded")
    key = sort.removeprefix("-")
    if key not in RUN_ORDERS:
        sort, key = "-uploaded", "uploaded"
    order = RUN_ORDERS[key]
    order = order.desc(nulls_last=True) if sort.startswith("-") else order.asc(nulls_last=True)
    page = Paginator(runs.order_by(order, "-created_at", "-pk"), RUNS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "page": page,
        "runs": page.object_list,
        "sort": sort,
        "filters": chosen,
        "errors": {name: " ".join(e) for name, e in chosen.errors.items()},
        "choices": _selected(selectors.run_filter_choices(), request.GET),
        "grading": selectors.runs_in_grading(),
        "query": _query(request, drop=("page",)),
        "sort_query": _query(request, drop=("page", "sort")),
    }
    return render(request, "submissions/run_index.html", context)


def _selected(choices: dict, query) -> dict[str, list[tuple[str, str, bool]]]:
    """(value, label, chosen) per option of each filter, as the form shows them."""
    return {
        name: [(value, label, query.get(name) == value) for value, label in options]
        for name, options in choices.items()
    }


def _query(request, *, drop: tuple[str, ...]) -> str:
    kept = request.GET.copy()
    for name in drop:
        kept.pop(name, None)
    return kept.urlencode()


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
