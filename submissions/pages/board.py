"""The boards: one per ranked hardware target (the home page shows the first), and its matrix.

Every bit of a board's state (filters, sort, the matrix statistic) is in the query string, so a
link or a reload shows the same view.
"""

from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from submissions import boards, selectors
from submissions.models import HardwareTarget, Harness, LanguageModel, Problem
from submissions.pages import figures

DIRECTIONS = {"asc": False, "desc": True}
MATRIX_STATS = ("best", "median")


@require_GET
def home(request):
    tabs = boards.ranked_hardware()
    if not tabs:
        context = {"runs": selectors.recent_published_runs()}
        return render(request, "submissions/no_board.html", context)
    return _board_page(request, tabs, tabs[0])


@require_GET
def board(request, hardware):
    tabs = boards.ranked_hardware()
    return _board_page(request, tabs, hardware_tab(tabs, hardware))


def _board_page(request, tabs: list[HardwareTarget], hardware: HardwareTarget):
    table = boards.board(
        hardware=hardware,
        filters=boards.BoardFilters.from_query(request.GET),
        sort=request.GET.get("sort", "rank"),
        descending=DIRECTIONS.get(request.GET.get("dir", "")),
    )
    context = {
        "board": table,
        "tabs": tabs,
        "hardware": hardware,
        "choices": filter_choices(),
        "keep": kept(request, ("sort", "dir")),
        "provenance": boards.counted_provenance(hardware=hardware),
        "fast_p": figures.fast_p_curves(table.rows, boards.FAST_P_THRESHOLDS),
    }
    return render(request, "submissions/board.html", context)


def kept(request, names: tuple[str, ...]) -> list[tuple[str, str]]:
    """Query parameters other than the filters that applying the filter form must keep."""
    return [(name, request.GET[name]) for name in names if request.GET.get(name)]


def filter_choices() -> dict:
    """What the filter form offers: the registry's models, harnesses, providers, categories,
    and the wall budgets runs declared."""
    return {
        "models": LanguageModel.objects.order_by("display_name").values_list(
            "slug", "display_name"
        ),
        "harnesses": Harness.objects.order_by("name", "version").values_list(
            "slug", "name", "version"
        ),
        "providers": (
            LanguageModel.objects.exclude(provider="")
            .order_by("provider")
            .values_list("provider", flat=True)
            .distinct()
        ),
        "categories": Problem.Category.choices,
        "budgets": boards.budget_choices(),
    }


@require_GET
def matrix(request, hardware):
    tabs = boards.ranked_hardware()
    target = hardware_tab(tabs, hardware)
    stat = request.GET.get("stat", "best")
    if stat not in MATRIX_STATS:
        stat = "best"
    filters = boards.BoardFilters.from_query(request.GET)
    table = boards.matrix(hardware=target, stat=stat, filters=filters)
    context = {
        "matrix": table,
        "tabs": tabs,
        "hardware": target,
        "choices": filter_choices(),
        "keep": kept(request, ("stat",)),
        "provenance": boards.counted_provenance(hardware=target),
    }
    return render(request, "submissions/matrix.html", context)


@require_GET
def default_matrix(request):
    return first_tab_redirect("submissions:matrix")


def first_tab_redirect(url_name: str):
    tabs = boards.ranked_hardware()
    if not tabs:
        raise Http404("No ranked hardware target yet.")
    return redirect(url_name, hardware=tabs[0].slug)


def hardware_tab(tabs: list[HardwareTarget], slug: str) -> HardwareTarget:
    found = next((tab for tab in tabs if tab.slug == slug), None)
    if found is None:
        raise Http404("No ranked hardware target by that name.")
    return found
