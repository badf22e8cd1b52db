"""The server-rendered parts of the page: header, totals, evaluation and solution. All escaped."""

from __future__ import annotations

import json
from html import escape

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from transcripts.model import Session

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
        f'<header><h1>{_e(title)}</h1><p class="verdict {cls}">{_e(verdict or "not graded")}</p>'
        f'<table class="meta">{_rows(rows)}</table>{_warnings(session)}</header>'
    )


def totals_html(totals: dict) -> str:
    usage, own = totals["usage"], totals["own_usage"]
    token_rows = [(key.replace("_", " "), f"{usage[key]:,}", f"{own[key]:,}") for key in usage] + [
        ("total", f"{sum(usage.values()):,}", f"{sum(own.values()):,}")
    ]
    head = "<tr><th>tokens</th><th>run, subagents included</th><th>main thread</th></tr>"
    body = "".join(f"<tr><th>{_e(a)}</th><td>{b}</td><td>{c}</td></tr>" for a, b, c in token_rows)
    reported = totals.get("reported_usage")
    other = [
        ("cost", f"${totals['cost_usd']:.4f}" if totals.get("cost_usd") is not None else None),
        ("duration", _duration(totals.get("duration_ms"))),
        ("turns", totals.get("turns")),
        ("API calls", totals["api_calls"]),
        ("tool calls", totals["tool_calls"]),
        ("subagents", totals["subagents"]),
        ("usage reported by the CLI", _usage_line(reported) if reported else None),
    ]
    return (
        f'<section id="totals"><h2>Totals</h2><table class="tokens">{head}{body}</table>'
        f'<table class="meta">{_rows(other)}</table></section>'
    )


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
    return f'<h3>Gates</h3><table class="gates">{head}{rows}</table>' if gates else ""


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
    return f'<h3>Shapes</h3><table class="shapes"><tr>{head}</tr>{rows}</table>'


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


def _usage_line(usage: dict) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in usage.items() if v)


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
