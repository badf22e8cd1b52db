"""The charts of one hardware target's board: score against cost and against output tokens,
each with its Pareto frontier, and the score per problem of each configuration."""

from django.shortcuts import render
from django.views.decorators.http import require_GET

from submissions import boards
from submissions.boards.charts import chart_data
from submissions.pages import figures
from submissions.pages.board import filter_choices, first_tab_redirect, hardware_tab


@require_GET
def charts(request, hardware):
    tabs = boards.ranked_hardware()
    target = hardware_tab(tabs, hardware)
    filters = boards.BoardFilters.from_query(request.GET)
    data = chart_data(hardware=target, filters=filters)
    context = {
        "tabs": tabs,
        "hardware": target,
        "data": data,
        "figures": figures.chart_figures(data) if data.points else {},
        "choices": filter_choices(),
        "keep": [],
        "provenance": boards.counted_provenance(hardware=target),
    }
    return render(request, "submissions/charts.html", context)


@require_GET
def default_charts(request):
    return first_tab_redirect("submissions:charts")
