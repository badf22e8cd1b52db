"""The charts page's figures skip plotly's validation in the request (thousands of points); here
each one is validated, and its links checked, on the synthetic history's real rows."""

import json

import plotly.graph_objects as go
from django.http import QueryDict
from django.urls import reverse

from submissions import boards
from submissions.boards.charts import chart_data
from submissions.models import HardwareTarget
from submissions.pages import figures


def test_chart_figures_are_valid_plotly_figures_linking_their_configurations(history):
    hardware = HardwareTarget.objects.get(slug="h100-sxm")
    data = chart_data(hardware=hardware, filters=boards.BoardFilters.from_query(QueryDict()))
    assert data.points
    built = figures.chart_figures(data)
    assert set(built) == {"cost", "tokens", "problems"}
    for name, figure in built.items():
        validated = go.Figure(figure)  # raises on any property plotly does not know
        assert validated.to_plotly_json()["data"] == figure["data"], name
        assert figure["data"], name
    # one point per configuration, opening that configuration's runs on this board
    points = [trace for trace in built["cost"]["data"] if trace["name"] != "Pareto frontier"]
    assert [len(trace["x"]) for trace in points] == [1] * len(data.cost) and len(points) > 1
    first = data.cost[0]
    link = QueryDict(points[0]["customdata"][0].split("?", 1)[1])
    assert points[0]["customdata"][0].startswith(reverse("submissions:run-index") + "?")
    assert (link["hardware"], link["model"], link["harness"]) == (
        "h100-sxm",
        first.model_slug,
        first.harness_slug,
    )
    # a colour no other configuration of the chart has, and plain numbers on the axes
    colours = [trace["marker"]["color"] for trace in points]
    assert len(set(colours)) == len(colours)
    assert built["cost"]["layout"]["xaxis"]["tickformat"] == ",.2~r"


def test_the_palette_never_repeats_a_colour_within_a_chart():
    for count in (1, 12, 13, 40):
        colours = figures.palette([f"config {n}" for n in range(count)])
        assert len(set(colours.values())) == count


def test_run_paths_follow_the_script_prefix(settings):
    from django.urls import set_script_prefix

    run = "9b2f0a52-3c1e-4c55-9d7e-2f4b2a7c1e00"
    assert figures.run_path(run) == reverse("submissions:run-detail", kwargs={"run_id": run})
    set_script_prefix("/arena/")
    try:
        assert figures.run_path(run).startswith("/arena/")
        assert figures.run_path(run) == reverse("submissions:run-detail", kwargs={"run_id": run})
    finally:
        set_script_prefix("/")
    assert figures.run_path(None) is None


def test_json_data_writes_what_json_script_writes():
    from django.utils.html import json_script

    from submissions.templatetags.arena_format import json_data

    value = {
        "text": "</script><script>alert('x')</script> & <b>",
        "n": [1, 2.5, None],
        "é": "ü",
    }
    assert json_data(value, "fig-1") == json_script(value, "fig-1")
    assert "</script><script>" not in json_data(value, "a")


def test_the_boards_fast_p_curve_is_a_valid_figure_of_its_rows(history):
    hardware = HardwareTarget.objects.get(slug="h100-sxm")
    rows = boards.board(hardware=hardware).rows
    figure = figures.fast_p_curves(rows, boards.FAST_P_THRESHOLDS)
    go.Figure(figure)  # raises on any property plotly does not know
    shown = {trace["name"]: trace["y"] for trace in figure["data"]}
    assert shown and all(row.config_label in shown for row in rows if row.fast_p[0] > 0)
    for row in rows:
        if row.config_label in shown:
            assert shown[row.config_label][1] == row.fast_1  # p = 1 is the board's column
    assert figure["layout"]["xaxis"]["tickvals"] == list(boards.FAST_P_THRESHOLDS)
    assert figures.fast_p_curves([], boards.FAST_P_THRESHOLDS) is None


def test_an_uploaders_effort_is_shown_as_text_never_drawn_as_markup(db):
    from submissions.boards.snapshot import refresh_board
    from tests.boards.factories import make_graded_run
    from tests.factories import make_hardware, make_harness, make_language_model, make_problem

    hardware = make_hardware("h100-sxm")
    effort = '<a href="//evil.example">max</a><span style="x">'  # under the 50 a run holds
    model = make_language_model("gpt-5", display_name="GPT-5")
    for harness in ("codex-cli", "opencode"):
        make_graded_run(
            problem=make_problem(f"p-{harness}"),
            model=model,
            harness=make_harness(harness, name=harness),
            hardware=hardware,
            effort=effort,
            cost_usd=1.0,
            output_tokens=100,
            speedups=((2.0, 1.0),),
        )
    refresh_board(hardware_id=hardware.pk)
    data = chart_data(hardware=hardware, filters=boards.BoardFilters())
    built = figures.chart_figures(data)
    built["fast_p"] = figures.fast_p_curves(boards.board(hardware=hardware).rows, (0.5, 1.0))
    drawn = json.dumps(built)
    assert len(effort) <= 50 and "<a href" not in drawn and "<span style" not in drawn
    assert json.dumps('&lt;a href="//evil.example"&gt;max&lt;/a&gt;')[1:-1] in drawn
