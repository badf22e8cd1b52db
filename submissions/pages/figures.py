"""Plotly figures built from the selectors' dataclasses, as JSON for ``json_script``.

Pages never compute numbers: each function here only lays out what a selector returned.
``static/charts.js`` draws every figure on a page with the plotly.js of the installed package.
A point's ``customdata`` is the URL of the run behind it; clicking the point opens that run.
"""

import html
import json
from functools import cache
from urllib.parse import urlencode

import plotly.colors
import plotly.graph_objects as go
import plotly.io as pio
from django.urls import get_script_prefix, get_urlconf, reverse

from submissions.templatetags.arena_format import sig

FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"
INK, MUTED, GRID = "#1d232a", "#5b6673", "#e6e9ed"
PALETTE = (
    "#0b6bcb", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#1098ad",
    "#e67700", "#5c940d", "#364fc7", "#a61e4d", "#0c8599", "#5f3dc4",
)  # fmt: skip
FRONTIER = "#c62828"


def as_json(fig: go.Figure) -> dict:
    """The figure as plain JSON data (plotly's encoder, orjson when installed)."""
    return json.loads(fig.to_json())


def unvalidated(data: list[dict], layout_: dict) -> dict:
    """A figure of thousands of points as plain JSON data without plotly's property validation,
    which costs tens of milliseconds per thousand points in a request; the figures built this way
    are validated by the tests (`tests/pages/test_chart_figures.py`) instead."""
    return json.loads(pio.to_json({"data": data, "layout": layout_}, validate=False))


def plain(text: str) -> str:
    """Uploader-given text (an effort, a model's name) as plotly shows it: plotly draws tags such
    as <a href> and <span style> found in names and labels, so < > & are written as entities."""
    return html.escape(text, quote=False)


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def layout(*, height: int = 360, **overrides) -> dict:
    """A small house layout instead of plotly's default template (which adds 7 KB per figure)."""
    axis = {"gridcolor": GRID, "zerolinecolor": GRID, "linecolor": GRID, "automargin": True}
    base = {
        "template": go.layout.Template(),
        "height": height,
        "margin": {"l": 56, "r": 16, "t": 16, "b": 48},
        "font": {"family": FONT, "size": 12, "color": INK},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "xaxis": axis,
        "yaxis": dict(axis),
        "legend": {"orientation": "h", "y": -0.22, "font": {"size": 11}},
        "hoverlabel": {"font": {"family": FONT}},
    }
    for key, value in overrides.items():
        base[key] = base[key] | value if isinstance(base.get(key), dict) else value
    return base


def evaluation_history(reports) -> dict:
    """Score and held-out score of each completed evaluation of a run, one line per hardware."""
    series: dict[str, list] = {}
    for report in reversed(reports):  # oldest first
        evaluation = report.evaluation
        if evaluation.status == "done" and evaluation.finished_at:
            series.setdefault(evaluation.hardware.name, []).append(evaluation)
    fig = go.Figure(
        layout=layout(height=240, yaxis={"title": {"text": "score"}, "rangemode": "tozero"})
    )
    for index, (hardware, evaluations) in enumerate(series.items()):
        when = [e.finished_at.isoformat() for e in evaluations]
        fig.add_scatter(
            x=when,
            y=[e.score for e in evaluations],
            name=f"{hardware}: score",
            mode="lines+markers",
            line={"color": color(index)},
            text=[f"{e.get_verdict_display()} · score {sig(e.score)}" for e in evaluations],
            hovertemplate="%{x|%Y-%m-%d %H:%M}<br>%{text}<extra></extra>",
        )
        fig.add_scatter(
            x=when,
            y=[e.hidden_score for e in evaluations],
            name=f"{hardware}: held-out score",
            mode="lines+markers",
            line={"color": color(index), "dash": "dot"},
            hovertemplate="%{x|%Y-%m-%d %H:%M}<br>held-out score %{y:.3g}<extra></extra>",
        )
    return as_json(fig)


# x axes of the convergence curve: field of selectors.CurvePoint, axis title
CURVE_AXES = (
    ("turn", "turn"),
    ("output_tokens", "output tokens so far"),
    ("wall_s", "wall time so far (s)"),
)


def convergence(curve) -> dict:
    """Each graded version's score, the best correct score so far, failures on the axis and the
    first correct version, against turns; buttons switch the x axis to tokens or wall time."""
    points = curve.points
    failed = [p for p in points if not p.correct]
    first = [curve.first_correct] if curve.first_correct else []
    series = (
        ("score", [p for p in points if p.correct], "markers", {"color": PALETTE[0], "size": 8}),
        ("best so far", points, "lines", None),
        ("failed", failed, "markers", {"color": FRONTIER, "size": 10, "symbol": "x"}),
        ("first correct", first, "markers", _FIRST_MARKER),
    )
    fig = go.Figure(layout=_curve_layout(series))
    for name, members, mode, marker in series:
        fig.add_scatter(
            x=[p.turn for p in members],
            y=[_curve_y(name, p) for p in members],
            name=name,
            mode=mode,
            marker=marker,
            cliponaxis=False,  # failures sit on the axis
            line={"color": INK, "shape": "hv", "width": 2},
            text=[f"version {p.index} ({p.how}) · {p.verdict}" for p in members],
            hovertemplate="%{text}<br>x %{x} · score %{y:.3g}<extra></extra>",
        )
    return as_json(fig)


def convergence_overlay(curves) -> dict:
    """Best score so far against turns, one line per configuration's run (the problem page)."""
    fig = go.Figure(
        layout=layout(
            height=340,
            xaxis={"title": {"text": "turn"}},
            yaxis={"title": {"text": "best score so far"}, "rangemode": "tozero"},
        )
    )
    for n, entry in enumerate(curves):
        points = entry.curve.points
        fig.add_scatter(
            x=[p.turn for p in points],
            y=[p.best for p in points],
            name=plain(entry.label),
            mode="lines+markers",
            line={"color": color(n), "shape": "hv", "width": 2},
            customdata=[run_path(entry.run_uuid)] * len(points),
            text=[f"version {p.index} · {p.verdict}" for p in points],
            hovertemplate="%{text}<br>turn %{x} · best %{y:.3g}<extra></extra>",
        )
    return as_json(fig)


_FIRST_MARKER = {
    "color": "#2b8a3e",
    "size": 16,
    "symbol": "star",
    "line": {"color": "#fff", "width": 1},
}


def _curve_y(name: str, point) -> float | None:
    if name == "failed":
        return 0
    return point.best if name == "best so far" else point.score


def _curve_layout(series) -> dict:
    buttons = [
        {
            "label": title.removesuffix(" so far (s)").removesuffix(" so far"),
            "method": "update",
            "args": [
                {"x": [[getattr(p, field) for p in members] for _, members, _, _ in series]},
                {"xaxis.title.text": title},
            ],
        }
        for field, title in CURVE_AXES
    ]
    menu = {"type": "buttons", "direction": "right", "x": 0, "y": 1.18, "xanchor": "left"}
    return layout(
        height=340,
        margin={"t": 48, "b": 64},
        legend={"y": -0.3},
        xaxis={"title": {"text": "turn"}},
        yaxis={"title": {"text": "score"}, "rangemode": "tozero"},
        updatemenus=[menu | {"buttons": buttons, "showactive": True}],
    )


def run_path(run_uuid: str | None) -> str | None:
    return run_paths()(run_uuid)


def run_paths():
    """A function from a run's UUID to its page's path, formatted from a template reversed once
    per URL configuration and script prefix (a chart links thousands of points: reversing each
    took 0.1 ms, and even looking up the prefix each time 7 µs)."""
    template = _run_path(get_urlconf(), get_script_prefix())
    return lambda run_uuid: template.format(run_uuid) if run_uuid else None


_ANY_UUID = "00000000-0000-0000-0000-000000000000"


@cache
def _run_path(urlconf, prefix: str) -> str:
    path = reverse("submissions:run-detail", urlconf=urlconf, kwargs={"run_id": _ANY_UUID})
    return path.replace("{", "{{").replace("}", "}}").replace(_ANY_UUID, "{}")


# -- problem page ------------------------------------------------------------------------------
REFERENCE_MARKERS = {
    "eager": ("eager", "diamond", "#5b6673"),
    "compile": ("torch.compile", "square", "#e67700"),
    "library": ("library (cuBLAS, SDPA...)", "star", "#2b8a3e"),
    "starter": ("starter", "triangle-up", "#862e9c"),
}


def problem_figures(page) -> dict[str, dict]:
    figures = {"distribution": score_distribution(page.distribution)}
    if page.roofline.points or page.roofline.peak_tflops:
        figures["roofline"] = roofline(page.roofline)
    if page.outcomes:
        figures["outcomes"] = outcomes(page.outcomes)
    return figures


def roofline(roof) -> dict:
    """Log-log: arithmetic intensity (FLOP/byte) against achieved TFLOPS, under the hardware's
    compute roof and bandwidth roof."""
    fig = go.Figure(
        layout=layout(
            height=420,
            xaxis={
                "type": "log",
                "title": {"text": "arithmetic intensity (FLOP per byte)"},
                "tickformat": ".2~g",
                "dtick": "D2",
            },
            yaxis={
                "type": "log",
                "title": {"text": "achieved TFLOPS"},
                "tickformat": ".2~g",
                "dtick": "D2",
            },
        )
    )
    runs = [p for p in roof.points if p.kind == "run"]
    span = _intensity_span(roof)
    if roof.peak_tflops and roof.bandwidth_gbps and span:
        low, high = span
        ridge = roof.ridge_intensity
        xs = [low, *([ridge] if low < ridge < high else []), high]
        fig.add_scatter(
            x=xs,
            y=[min(roof.peak_tflops, roof.bandwidth_gbps * x / 1e3) for x in xs],
            mode="lines",
            name=f"roof: {sig(roof.bandwidth_gbps)} GB/s, {sig(roof.peak_tflops)} TFLOPS",
            line={"color": INK, "width": 2},
            hoverinfo="skip",
        )
    fig.add_scatter(
        x=[p.intensity for p in runs],
        y=[p.tflops for p in runs],
        mode="markers",
        name="runs (visible shapes)",
        marker={"color": PALETTE[0], "size": 7, "opacity": 0.7},
        text=[plain(p.label) for p in runs],
        customdata=list(map(run_paths(), (p.run_uuid for p in runs))),
        hovertemplate="%{text}<br>%{x:.3g} FLOP/B · %{y:.3g} TFLOPS<extra></extra>",
    )
    for kind, (name, symbol, shade) in REFERENCE_MARKERS.items():
        points = [p for p in roof.points if p.kind == kind]
        if points:
            fig.add_scatter(
                x=[p.intensity for p in points],
                y=[p.tflops for p in points],
                mode="markers",
                name=name,
                marker={
                    "color": shade,
                    "size": 10,
                    "symbol": symbol,
                    "line": {"color": "#fff", "width": 1},
                },
                text=[plain(p.label) for p in points],
                hovertemplate="%{text}<br>%{x:.3g} FLOP/B · %{y:.3g} TFLOPS<extra></extra>",
            )
    return as_json(fig)


def _intensity_span(roof) -> tuple[float, float] | None:
    """The x range the roofs are drawn over: the points', widened, and the ridge point."""
    values = [p.intensity for p in roof.points if p.intensity > 0]
    ridge = roof.ridge_intensity
    if ridge:
        values.append(ridge)
    if not values:
        return None
    return min(values) / 4, max(values) * 4


def score_distribution(distribution) -> dict:
    """How many runs scored in each bin."""
    fig = go.Figure(
        layout=layout(
            height=260,
            bargap=0.05,
            xaxis={"title": {"text": "run score"}},
            yaxis={"title": {"text": "runs"}},
            showlegend=False,
        )
    )
    bins = distribution.bins
    fig.add_bar(
        x=[(b.low + b.high) / 2 for b in bins],
        y=[b.count for b in bins],
        width=[b.high - b.low for b in bins],
        marker={"color": PALETTE[0]},
        text=[f"{sig(b.low)} to {sig(b.high)}" for b in bins],
        textposition="none",
        hovertemplate="score %{text}<br>%{y} runs<extra></extra>",
    )
    return as_json(fig)


OUTCOME_PARTS = (
    ("both", "correct on both", "#2b8a3e"),
    ("visible_only", "visible only", "#e67700"),
    ("hidden_only", "held-out only", "#862e9c"),
    ("neither", "neither", "#c62828"),
)


def outcomes(rows) -> dict:
    """Per configuration, its runs split by correctness on visible and on held-out shapes."""
    labels = [plain(row.config_label) for row in rows]
    fig = go.Figure(
        layout=layout(
            height=max(160, 28 * len(rows) + 90),
            barmode="stack",
            legend={"traceorder": "normal"},
            # whole runs: no fractional ticks when a configuration has few
            xaxis={
                "title": {"text": "runs"},
                "dtick": 1 if max(r.runs for r in rows) <= 10 else None,
            },
            yaxis={"autorange": "reversed"},
            margin={"l": 16},
        )
    )
    for field, name, shade in OUTCOME_PARTS:
        fig.add_bar(
            y=labels,
            x=[getattr(row, field) for row in rows],
            name=name,
            orientation="h",
            marker={"color": shade},
            hovertemplate="%{y}<br>" + name + ": %{x}<extra></extra>",
        )
    return as_json(fig)


# -- board ---------------------------------------------------------------------------------------
def fast_p_curves(rows, thresholds) -> dict | None:
    """fast_p against p, a line per configuration with a correct run more than half as fast as
    eager (the rest lie at 0 everywhere); None when no configuration has one."""
    shown = [row for row in rows if row.fast_p[0] > 0]
    if not shown:
        return None
    colors = palette(sorted(row.config_key for row in shown))
    traces = [
        {
            "type": "scatter",
            "x": list(thresholds),
            "y": list(row.fast_p),
            "mode": "lines+markers",
            "name": plain(row.config_label),
            "line": {"color": colors[row.config_key], "width": 2},
            "marker": {"size": 6},
            "hovertemplate": "%{fullData.name}<br>faster than eager by over %{x}\u00d7: "
            "%{y:.0%} of the problems<extra></extra>",
        }
        for row in shown
    ]
    ticks = [f"{t:g}\u00d7" for t in thresholds]
    return unvalidated(
        traces,
        layout(
            height=380,
            xaxis={
                "type": "log",
                "title": {"text": "p: speedup over PyTorch eager"},
                "tickvals": list(thresholds),
                "ticktext": ticks,
            },
            yaxis={"title": {"text": "share of problems"}, "tickformat": ".0%", "range": [0, 1]},
            legend={"orientation": "v", "y": 1, "x": 1.02, "font": {"size": 11}},
            margin={"r": 8},
        ),
    )


# -- charts page -------------------------------------------------------------------------------
def chart_figures(data) -> dict[str, dict]:
    colors = palette(sorted({p.config_key for p in data.points}))
    runs_of = _runs_of(data.hardware.slug)
    return {
        "cost": frontier_chart(
            data.cost, data.cost_frontier, colors, runs_of, field="cost", title="cost per run"
        ),
        "tokens": frontier_chart(
            data.tokens,
            data.tokens_frontier,
            colors,
            runs_of,
            field="tokens",
            title="output tokens per run",
        ),
        "problems": problem_scores(data.problem_scores, colors),
    }


def palette(keys: list[str]) -> dict[str, str]:
    """A colour per key that no other key of the chart shares: the house palette while it lasts,
    then plotly's 24 distinct colours, else hues spread by the golden angle (neighbours far
    apart), two lightnesses alternating."""
    for colours in (PALETTE, plotly.colors.qualitative.Dark24):
        if len(keys) <= len(colours):
            return dict(zip(keys, colours, strict=False))
    return {
        key: f"hsl({n * 137.508 % 360:.1f}, 70%, {42 if n % 2 else 56}%)"
        for n, key in enumerate(keys)
    }


def _runs_of(hardware_slug: str):
    """The runs list of one configuration on this board (a point opens it)."""
    base = reverse("submissions:run-index")

    def link(point) -> str:
        query = {"hardware": hardware_slug, "model": point.model_slug}
        query["harness"] = point.harness_slug
        if point.effort:
            query["effort"] = point.effort
        return f"{base}?{urlencode(query)}"

    return link


# Plain numbers on the log axes (never "2e+2"), ticks at 1, 2 and 5 times the powers of ten.
TICKS = {
    "cost": {"tickprefix": "$", "tickformat": ",.2~r", "dtick": "D2"},
    "tokens": {"tickformat": ".2~s", "dtick": "D2"},
}
HOVER = {"cost": "mean $%{x:,.2f} a run", "tokens": "mean %{x:,.0f} output tokens a run"}


def frontier_chart(points, frontier, colors: dict[str, str], runs_of, *, field, title) -> dict:
    """Each configuration's mean score against its mean cost (dollars or output tokens) per
    run, log x, one point and one colour each; the Pareto frontier (no configuration both
    cheaper and better) drawn as a staircase. A point opens the configuration's runs."""
    hover = f"%{{text}}<br>{HOVER[field]} · mean score %{{y:.3g}}<extra></extra>"
    traces = [
        {
            "type": "scatter",
            "x": [point.figure],
            "y": [point.score],
            "mode": "markers",
            "name": plain(point.config_label),
            "marker": {"color": colors[point.config_key], "size": 10},
            "text": [f"{plain(point.config_label)}<br>{point.runs} run{'s' * (point.runs != 1)}"],
            "customdata": [runs_of(point)],
            "hovertemplate": hover,
        }
        for point in points
    ]
    traces.append(
        {
            "type": "scatter",
            "x": [p.figure for p in frontier],
            "y": [p.score for p in frontier],
            "mode": "lines+markers",
            "name": "Pareto frontier",
            "line": {"color": FRONTIER, "width": 2, "shape": "hv"},
            "marker": {"color": FRONTIER, "size": 15, "symbol": "circle-open"},
            "hoverinfo": "skip",
        }
    )
    return unvalidated(
        traces,
        layout(
            height=420,
            xaxis={"type": "log", "title": {"text": title}, **TICKS[field]},
            yaxis={"title": {"text": "mean run score"}, "rangemode": "tozero"},
            legend={"orientation": "v", "y": 1, "x": 1.02, "font": {"size": 11}},
            margin={"r": 8},
        ),
    )


def problem_scores(groups, colors: dict[str, str]) -> dict:
    """Each configuration's run scores per problem: a box per configuration and problem, every
    run drawn beside it."""
    by_config: dict[str, list] = {}
    for group in groups:
        by_config.setdefault(group.config_key, []).append(group)
    traces = [
        {
            "type": "box",
            "x": [plain(m.problem_title) for m in members for _ in m.scores],
            "y": [score for m in members for score in m.scores],
            "name": plain(members[0].config_label),
            "marker": {"color": colors[key], "size": 4},
            "boxpoints": "all",
            "jitter": 0.4,
            "pointpos": 0,
            "line": {"width": 1},
            "hovertemplate": "%{x}<br>score %{y:.3g}<extra>%{fullData.name}</extra>",
        }
        for key, members in by_config.items()
    ]
    return unvalidated(
        traces,
        layout(
            height=440,
            boxmode="group",
            yaxis={"title": {"text": "run score"}, "rangemode": "tozero"},
            legend={"orientation": "v", "y": 1, "x": 1.02, "font": {"size": 11}},
            margin={"r": 8},
        ),
    )
