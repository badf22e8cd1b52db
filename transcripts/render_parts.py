"""The server-rendered parts of the page: header, totals, evaluation and solution. All escaped."""

from __future__ import annotations

import json
from html import escape

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from transcripts.figures import CLI, EVENTS, run_usage
from transcripts.model import Kind, Session, Usage

_FORMATTER = HtmlFormatter(cssclass="hl", linenos="inline")


def pygments_css() -> str:
    return _FORMATTER.get_style_defs(".hl")


def header_html(session: Session, *, context: dict, title: str) -> str:
    rows = [
        ("problem", context.get("problem")),
        ("model", context.get("model") or ", ".join(session.models) or None),
        ("harness", context.get("harness") or session.harness),
        ("verdict", context.get("verdict")),
        ("score", _number(context.get("score"))),
        ("format", session.format),
        ("CLI version", session.cli_version),
        ("session", session.id),
        ("session title", session.title),
        ("working directory", session.cwd),
        ("started", session.started_at),
        ("ended", session.ended_at),
        ("records read", _counts(session.record_counts)),
    ]
    verdict = str(context.get("verdict") or "")
    cls = "ok" if verdict == "ok" else ("bad" if verdict else "")
    return (
        f"{_site_nav(context.get('site_links'))}<header>{_back_link(context.get('back_url'))}"
        f'<h1>{_e(title)}</h1><p class="verdict {cls}">{_e(verdict or "not graded")}</p>'
        f'<table class="meta">{_rows(rows)}</table>{_warnings(session)}</header>'
    )


def _site_nav(links) -> str:
    """The platform's own links (absolute, so the downloaded file has them too): the site's
    header on a page that is not one of its templates."""
    shown = [(label, url) for label, url in links or () if _web_url(url)]
    if not shown:
        return ""
    anchors = "".join(f'<a href="{_e(url)}">{_e(label)}</a>' for label, url in shown)
    return f'<nav class="site" aria-label="Site">{anchors}</nav>'


def _web_url(url) -> bool:
    return isinstance(url, str) and url.startswith(("https://", "http://", "/"))


def _scroll(table: str) -> str:
    """A wide table scrolls inside its own box, never the page (a phone is 390 px wide)."""
    return f'<div class="scroll">{table}</div>'


def _back_link(url) -> str:
    """The page's way back to where it came from (the platform's run page); only web links."""
    if not _web_url(url):
        return ""
    return f'<p class="back"><a href="{_e(url)}">\u2190 Back to the run</a></p>'


_TOKEN_ROWS = (
    ("input: every prompt token", lambda u: u.input + u.cache_read + u.cache_write),
    ("\u2003of which cache reads", lambda u: u.cache_read),
    ("\u2003of which cache writes", lambda u: u.cache_write),
    ("\u2003of which uncached", lambda u: u.input),
    ("output: every generated token", lambda u: u.output),
    ("\u2003of which reasoning", lambda u: u.reasoning),
    ("total = input + output", lambda u: u.total),
)
_SOURCES = {CLI: "the CLI's own run total", EVENTS: "summed over API calls"}


def totals_html(session: Session, totals: dict) -> str:
    run, source = run_usage(session)
    columns = [
        (f"run, as the leaderboard counts it ({_SOURCES.get(source, 'no usage')})", run, source),
        ("summed over API calls, subagents included", Usage(**totals["usage"]), True),
        ("main thread's API calls", Usage(**totals["own_usage"]), True),
    ]
    head = "<tr><th>tokens, normalized</th>" + "".join(f"<th>{_e(c[0])}</th>" for c in columns)
    body = "".join(
        f"<tr><th>{label}</th>"
        + "".join(f"<td>{f'{value(u):,}' if shown else '-'}</td>" for _, u, shown in columns)
        + "</tr>"
        for label, value in _TOKEN_ROWS
    )
    other = [
        ("cost (the CLI's own)", _money(totals.get("cost_usd"))),
        ("duration", _duration_with_source(session, totals.get("duration_ms"))),
        ("turns", totals.get("turns")),
        ("API calls", totals["api_calls"]),
        ("tool calls", totals["tool_calls"]),
        ("subagents", totals["subagents"]),
    ]
    return (
        f'<section id="totals"><h2>Totals</h2>{_NORMALIZED_NOTE}{_under_reported(session, run)}'
        + _scroll(f'<table class="tokens">{head}</tr>{body}</table>')
        + cli_figures_html(session.cli_figures)
        + f'<table class="meta">{_rows(other)}</table></section>'
    )


# Characters the model wrote per output token it was billed for, about four in English and code;
# a file reporting under one token per 20 characters did not record its output (some Claude
# Code versions write only each call's first streamed chunk's usage to the session file).
UNDER_REPORTED_CHARS_PER_TOKEN = 20


def _under_reported(session: Session, run: Usage) -> str:
    """A note where the file's output tokens cannot cover what the model visibly wrote."""
    written = sum(
        len(event.text) + len(str(event.arguments or ""))
        for _, part in session.walk()
        for event in part.events
        if event.kind in (Kind.ASSISTANT, Kind.REASONING, Kind.TOOL_CALL)
    )
    if written < 2000 or run.output * UNDER_REPORTED_CHARS_PER_TOKEN >= written:
        return ""
    return (
        f'<p class="warning">The file reports {run.output:,} output tokens for {written:,} '
        "characters the model wrote here (about four characters make a token): its output "
        "figure is under-reported, as some CLI versions record only part of each call's usage "
        "in the session file. The output figures below are the file's, not a count.</p>"
    )


def _duration_with_source(session: Session, duration_ms) -> str | None:
    shown = _duration(duration_ms)
    if shown is None:
        return None
    source = "the CLI's own" if session.duration_ms is not None else "first to last timestamp"
    return f"{shown} ({source})"


_NORMALIZED_NOTE = (
    '<p class="muted">Normalized figures mean the same for every CLI: input counts every prompt '
    "token (cache reads and writes included), output every generated token (reasoning "
    "included), total is input + output. How each CLI's fields map to them: docs/transcripts.md."
    "</p>"
)


def cli_figures_html(figures: dict) -> str:
    """The CLI's own figures under its own field names, values as written (never rounded)."""
    if not figures:
        return (
            '<p class="cli-figures muted">The CLI wrote no run or turn totals of its own; the '
            "figures above are its per-call usage, summed.</p>"
        )
    rows = "".join(
        f"<tr><th><code>{_e(name)}</code></th><td>{_e(verbatim(value))}</td></tr>"
        for name, value in _leaves(figures)
    )
    return "<h3>As the CLI reported them (field names and values as written)</h3>" + _scroll(
        f'<table class="cli-figures">{rows}</table>'
    )


def _leaves(figures: dict, prefix: str = ""):
    for name, value in figures.items():
        label = f"{prefix}{name}"
        if isinstance(value, dict) and value:
            yield from _leaves(value, label + ".")
        else:
            yield label, value


def verbatim(value) -> str:
    """A figure as the CLI wrote it: integers get thousands separators, nothing is rounded."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return json.dumps(value)
    if isinstance(value, int):
        return f"{value:,}"
    return repr(value) if isinstance(value, float) else str(value)


def _money(value) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return "$" + f"{value:.10f}".rstrip("0").rstrip(".")


def evaluation_html(evaluation: dict | None) -> str:
    if not evaluation:
        return ""
    summary = [
        ("verdict", evaluation.get("verdict")),
        ("reason", evaluation.get("reason")),
        ("score", _number(evaluation.get("score"))),
        ("held-out score", _number(evaluation.get("hidden_score"))),
        ("device", evaluation.get("device")),
        ("engine", evaluation.get("engine_version")),
    ]
    return (
        '<section id="evaluation"><h2>Evaluation</h2>'
        f'<table class="meta">{_rows(summary)}</table>'
        f"{_gates_table(evaluation.get('gates') or [])}"
        f"{_shapes_table(evaluation.get('shapes') or [])}</section>"
    )


def solution_html(solution: str | None) -> str:
    if solution is None:
        return ""
    code = highlight(solution, PythonLexer(), _FORMATTER)
    return (
        '<section id="solution"><details open><summary><h2>solution.py</h2>'
        f'<span class="muted">{len(solution.splitlines())} lines</span></summary>'
        f"{code}</details></section>"
    )


def _gates_table(gates: list) -> str:
    names = ("gate", "status", "verdict", "reason", "seconds", "details")
    head = "<tr>" + "".join(f"<th>{name}</th>" for name in names) + "</tr>"
    rows = "".join(
        f'<tr class="gate-{_e(g.get("status"))}"><td>{_e(g.get("name"))}</td>'
        f"<td>{_e(g.get('status'))}</td><td>{_e(g.get('verdict'))}</td>"
        f"<td>{_e(g.get('reason'))}</td><td>{_e(_number(g.get('duration_s')))}</td>"
        f"<td>{_details(g.get('details'))}</td></tr>"
        for g in gates
    )
    return "<h3>Gates</h3>" + _scroll(f'<table class="gates">{head}{rows}</table>') if gates else ""


_SHAPE_COLUMNS = (
    "correct", "max_abs_err", "max_rel_err", "tflops", "gbps", "peak_fraction",
    "speedup_eager", "speedup_compile",
)  # fmt: skip


def _shapes_table(shapes: list) -> str:
    if not shapes:
        return ""
    head = "".join(f"<th>{c.replace('_', ' ')}</th>" for c in ("set", "shape", "median us"))
    head += "".join(f"<th>{c.replace('_', ' ')}</th>" for c in _SHAPE_COLUMNS) + "<th>error</th>"
    rows = "".join(_shape_row(shape) for shape in shapes)
    return "<h3>Shapes</h3>" + _scroll(f'<table class="shapes"><tr>{head}</tr>{rows}</table>')


def _shape_row(shape: dict) -> str:
    # Held-out parameters never reach a page, whatever the caller passed.
    if shape.get("set") == "hidden":
        label = shape.get("label") or f"held-out case {(shape.get('index') or 0) + 1}"
    else:
        label = json.dumps(shape.get("params"), sort_keys=True)
    median = (shape.get("time") or {}).get("median_us")
    cells = [shape.get("set"), label, _number(median)]
    cells += [_number(shape.get(c)) for c in _SHAPE_COLUMNS] + [shape.get("error")]
    return "<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>"


def _details(details) -> str:
    if not details:
        return ""
    return f"<pre>{_e(json.dumps(details, indent=1, sort_keys=True, default=str))}</pre>"


def _warnings(session: Session) -> str:
    if not session.warnings:
        return ""
    items = "".join(f"<li>{_e(w)}</li>" for w in session.warnings)
    summary = f"<summary>parser warnings ({len(session.warnings)})</summary>"
    return f'<details class="warnings">{summary}<ul>{items}</ul></details>'


def _rows(rows) -> str:
    return "".join(
        f"<tr><th>{_e(name)}</th><td>{_e(value)}</td></tr>"
        for name, value in rows
        if value is not None
    )


def _counts(counts: dict) -> str | None:
    return ", ".join(f"{name} {n:,}" for name, n in counts.items()) or None


def _number(value):
    if isinstance(value, float):
        return f"{value:.4g}"
    return value


def _duration(ms: int | None) -> str | None:
    if ms is None:
        return None
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {seconds:02d} s"


def _e(value) -> str:
    return "" if value is None else escape(str(value), quote=True)
