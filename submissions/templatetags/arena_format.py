"""Number formatting for pages: significant digits and units, never a raw float.

``{% load arena_format %}`` then ``{{ shape.median_us|duration_us }}``; every filter prints an em
dash for a missing value. ``figures.py`` uses the same functions for hover text.
"""

import json
import math

from django import template
from django.template.defaultfilters import filesizeformat
from django.utils.html import escape
from django.utils.safestring import mark_safe

from submissions.boards.snapshot import budget_key, budget_label
from submissions.models import Evaluation

register = template.Library()

DASH = "—"
TIMES = "\u00d7"  # multiplication sign, as in "1.8 times faster"
SCIENTIFIC_BELOW = 1e-3
SCIENTIFIC_FROM = 1e9


def _number(value) -> float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


@register.filter
def sig(value, digits: int = 3) -> str:
    """``digits`` significant digits with thousands separators; scientific when tiny or huge."""
    number = _number(value)
    if number is None:
        return DASH
    if number == 0:
        return "0"
    magnitude = abs(number)
    if magnitude < SCIENTIFIC_BELOW or magnitude >= SCIENTIFIC_FROM:
        mantissa, exponent = f"{number:.{int(digits) - 1}e}".split("e")
        return f"{_trim(mantissa)}e{int(exponent)}"
    decimals = max(0, int(digits) - 1 - math.floor(math.log10(magnitude)))
    text = f"{number:,.{decimals}f}"
    # 0.9996 rounds to 1.000 at three digits: the trailing zeros then claim a fourth digit.
    return _trim(text) if _rounded_up(number, text) else text


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def _rounded_up(number: float, text: str) -> bool:
    return math.floor(math.log10(abs(float(text.replace(",", ""))))) > math.floor(
        math.log10(abs(number))
    )


@register.filter
def duration_us(value) -> str:
    """A time given in microseconds, in the unit that keeps it short: µs, ms or s."""
    number = _number(value)
    if number is None:
        return DASH
    if abs(number) < 1e3:
        return f"{sig(number)} µs"
    if abs(number) < 1e6:
        return f"{sig(number / 1e3)} ms"
    return f"{sig(number / 1e6)} s"


@register.filter
def seconds(value) -> str:
    """A wall time given in seconds: s, min or h."""
    number = _number(value)
    if number is None:
        return DASH
    if abs(number) < 60:
        return f"{sig(number, 2)} s"
    if abs(number) < 3600:
        return f"{sig(number / 60, 2)} min"
    return f"{sig(number / 3600, 2)} h"


@register.filter
def budget(value) -> str:
    """A declared wall budget in seconds as the boards name it ("45 min", "1 h 30 min")."""
    return budget_label(budget_key(_number(value)))


@register.filter
def tflops(value) -> str:
    number = _number(value)
    return DASH if number is None else f"{sig(number)} TFLOPS"


@register.filter
def gbps(value) -> str:
    number = _number(value)
    return DASH if number is None else f"{sig(number)} GB/s"


@register.filter
def percent(value, digits: int = 3) -> str:
    """A fraction (0.423) as a percentage (42.3 %)."""
    number = _number(value)
    return DASH if number is None else f"{sig(number * 100, digits)} %"


@register.filter
def signed_percent(value) -> str:
    """A difference of fractions in percentage points, with its sign (+4.2 pp)."""
    number = _number(value)
    if number is None:
        return DASH
    return f"{'+' if number > 0 else ''}{sig(number * 100, 2)} pp"


@register.filter
def speedup(value) -> str:
    number = _number(value)
    return DASH if number is None else f"{sig(number)}{TIMES}"


@register.filter
def thousands(value) -> str:
    number = _number(value)
    return DASH if number is None else f"{round(number):,}"


@register.filter
def compact(value) -> str:
    """Counts such as tokens: 950, 12.3k, 4.56M, 1.2B."""
    number = _number(value)
    if number is None:
        return DASH
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(number) >= scale:
            return f"{sig(number / scale)}{suffix}"
    return f"{round(number):,}"


@register.filter
def usd(value) -> str:
    number = _number(value)
    if number is None:
        return DASH
    if number == 0 or abs(number) >= 1:
        return f"${number:,.2f}"
    return f"${sig(number, 2)}"


@register.filter
def score(value) -> str:
    """A score (a geomean of peak fractions, 0 to 1) with three significant digits."""
    return sig(value, 3)


@register.filter
def shape_params(params) -> str:
    """A visible shape's parameters as ``batch=8, dim=1024``."""
    if not isinstance(params, dict):
        return DASH
    return ", ".join(f"{key}={_scalar(value)}" for key, value in params.items())


EVIDENCE_ITEMS = 20
EVIDENCE_DEPTH = 5


@register.filter
def evidence(value) -> str:
    """A gate's details (nested JSON) as lists, numbers formatted, every string escaped."""
    return mark_safe(_evidence(value, 0))  # noqa: S308 (built from escaped parts only)


def _evidence(value, depth: int) -> str:
    if depth > EVIDENCE_DEPTH:
        return escape(json.dumps(value, default=str))
    if isinstance(value, dict):
        items = "".join(
            f"<li><b>{escape(key)}</b>: {_evidence(item, depth + 1)}</li>"
            for key, item in value.items()
        )
        return f'<ul class="evidence">{items}</ul>' if items else "none"
    if isinstance(value, list):
        return _evidence_list(value, depth)
    return escape(_scalar(value))


def _evidence_list(values: list, depth: int) -> str:
    if not values:
        return "none"
    shown, more = values[:EVIDENCE_ITEMS], len(values) - EVIDENCE_ITEMS
    tail = f" … and {more} more" if more > 0 else ""
    if not any(isinstance(item, dict | list) for item in shown):
        return escape(", ".join(_scalar(item) for item in shown) + tail)
    items = "".join(f"<li>{_evidence(item, depth + 1)}</li>" for item in shown)
    return f'<ul class="evidence">{items}</ul>{escape(tail)}'


def _scalar(value) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return sig(value)
    return str(value)


@register.filter
def manifest(environment) -> list[tuple[str, str]]:
    """An evaluation's environment as (name, text) rows: sizes in bytes readable, nested
    values flattened."""
    if not isinstance(environment, dict):
        return []
    return [
        (key.replace("_", " "), _manifest_value(key, value)) for key, value in environment.items()
    ]


def _manifest_value(key: str, value) -> str:
    if key.endswith("_bytes") and isinstance(value, int | float) and not isinstance(value, bool):
        return filesizeformat(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_scalar(v)}" for k, v in value.items()) or DASH
    if isinstance(value, list):
        return ", ".join(_scalar(item) for item in value) or DASH
    return _scalar(value)


VERDICT_LABELS = dict(Evaluation.Verdict.choices)


@register.filter
def verdict_label(verdict) -> str:
    """The taxonomy's words for a verdict code (``incorrect_hidden``: incorrect on held-out)."""
    return VERDICT_LABELS.get(verdict, verdict or DASH)


FAILURE_LABELS = {
    "static": "static",
    "build": "build",
    "wrong_visible": "wrong on visible",
    "wrong_hidden": "wrong on held-out",
    "timeout": "timeout",
    "crash": "crash",
    "infra": "infra",
    "not_run": "not run",
}


@register.filter
def failure_label(kind) -> str:
    """The matrix's words for a failure kind."""
    return FAILURE_LABELS.get(kind, kind or DASH)


@register.filter
def humanize_code(code) -> str:
    """A flag's code in words: ``visible_hidden_disagree`` → "visible hidden disagree"."""
    return str(code or DASH).replace("_", " ")


# json_script's three escapes, done with str.replace: its str.translate took 80 ms over the
# charts page's megabyte of figures, these take about one.
_SCRIPT_ESCAPES = (("&", "\\u0026"), ("<", "\\u003C"), (">", "\\u003E"))


@register.filter
def json_data(value, element_id: str):
    """Django's json_script (same encoder, same escapes, same tag), faster on large values."""
    from django.core.serializers.json import DjangoJSONEncoder

    text = json.dumps(value, cls=DjangoJSONEncoder)
    for char, escaped in _SCRIPT_ESCAPES:
        text = text.replace(char, escaped)
    return mark_safe(  # noqa: S308 - every <, > and & of the JSON is escaped above
        f'<script id="{escape(element_id)}" type="application/json">{text}</script>'
    )
