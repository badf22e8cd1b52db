"""Problem pages: the deck, and one problem's statement, runs and charts on one hardware."""

from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from submissions import boards, selectors
from submissions.models import HardwareTarget, Problem
from submissions.pages import figures
from submissions.pages.rendering import statement_html


@require_GET
def problem_index(request):
    problems = Problem.objects.order_by("-is_active", "category", "slug")
    return render(request, "submissions/problem_index.html", {"problems": problems})


@require_GET
def problem_detail(request, slug):
    problem = get_object_or_404(Problem, slug=slug)
    tabs = boards.ranked_hardware()
    hardware = _hardware(request.GET.get("hardware"), tabs)
    page = boards.problem_page(problem=problem, hardware=hardware) if hardware else None
    overlay = _overlay(page) if page else []
    context = {
        "problem": problem,
        "tabs": tabs,
        "hardware": hardware,
        "page": page,
        "statement_html": statement_html(problem.statement),
        "figures": figures.problem_figures(page) if page else {},
        "overlay": figures.convergence_overlay(overlay) if overlay else None,
    }
    return render(request, "submissions/problem_detail.html", context)


OVERLAY_CONFIGS = 5


def _overlay(page):
    """The lineage curves of the best run of each of the top configurations, where graded."""
    best: dict[str, tuple[str, str]] = {}
    for run in page.runs:  # ranked, best first
        if len(best) < OVERLAY_CONFIGS and run.config_key not in best:
            best[run.config_key] = (run.run_uuid, run.config_label)
    curves = selectors.lineage_overlay(runs=list(best.values()), hardware=page.hardware)
    return [entry for entry in curves if entry.curve.points]


def _hardware(slug: str | None, tabs: list[HardwareTarget]) -> HardwareTarget | None:
    """The ?hardware= target (an unranked one, such as the CPU, too), else the first tab."""
    if not slug:
        return tabs[0] if tabs else None
    found = next((tab for tab in tabs if tab.slug == slug), None)
    if found is None:
        found = HardwareTarget.objects.filter(slug=slug).first()
    if found is None:
        raise Http404("No hardware target by that name.")
    return found
