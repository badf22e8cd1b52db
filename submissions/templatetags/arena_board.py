"""The board table: headers that sort by a link (every state stays in the query string) and
each column's cell of a row (``submissions.boards.columns`` says which cell a column has)."""

from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import format_html

from submissions.templatetags import arena_format

register = template.Library()

ARROWS = {True: "▼", False: "▲"}
NO_SPREAD = (
    "The interval resamples runs within each problem: with one run a problem, or runs of equal "
    "score, it has no spread to show, which is no certainty"
)


@register.simple_tag(takes_context=True)
def sort_header(context, board, column):
    """A ``<th>`` whose link sorts the board by ``column``; on the sorted column it reverses the
    direction. Filters in the current query string are kept."""
    query = context["request"].GET.copy()
    query["sort"] = column.key
    current = board.sort == column.key
    if current:
        query["dir"] = "asc" if board.descending else "desc"
    else:
        query.pop("dir", None)
    sorting = ""
    arrow = ""
    if current:
        sorting = format_html(' aria-sort="{}"', "descending" if board.descending else "ascending")
        arrow = format_html(
            '<span class="arrow" aria-hidden="true">{}</span>', ARROWS[board.descending]
        )
    return format_html(
        '<th class="{}"{} title="{}"><a class="sort" href="?{}">{}{}</a></th>',
        "num" if column.numeric else "",
        sorting,
        column.help,
        query.urlencode(),
        column.label,
        arrow,
    )


@register.simple_tag
def board_cell(row, column, hardware):
    """The ``<td>`` of one column of a board row."""
    value = getattr(row, column.key)
    if column.cell in FIGURES:
        return format_html('<td class="num">{}</td>', FIGURES[column.cell](value))
    return CELLS[column.cell](row, value, hardware)


FIGURES = {
    "percent": arena_format.percent,
    "speedup": arena_format.speedup,
    "tokens": arena_format.compact,
    "usd": arena_format.usd,
    "seconds": arena_format.seconds,
}


def _rank(row, value, hardware):
    return format_html('<td class="num rank">{}</td>', value)


def _config(row, value, hardware):
    details = [f" · effort {row.effort}"] if row.effort else []
    details += [f" · {row.provider}"] if row.provider else []
    return format_html(
        '<td class="config"><a href="{}">{}</a> <small><a href="{}">{}</a>{}</small></td>',
        reverse("submissions:model-detail", kwargs={"slug": row.model_slug}),
        row.model_name,
        reverse("submissions:harness-detail", kwargs={"slug": row.harness_slug}),
        row.harness_name,
        "".join(details),
    )


def _score(row, value, hardware):
    return format_html('<td class="num"><b>{}</b></td>', arena_format.score(value))


def _interval(row, value, hardware):
    if row.ci_low == row.ci_high:
        said = "one run a problem" if row.runs == row.attempted else "equal runs a problem"
        return format_html(
            '<td class="num"><span class="no-spread" title="{}">{}</span></td>', NO_SPREAD, said
        )
    return format_html(
        '<td class="num">{} &ndash; {} <span class="ci" style="--low: {}; --high: {}; --score: {}" '
        'aria-hidden="true"><i></i><b></b></span></td>',
        arena_format.score(row.ci_low),
        arena_format.score(row.ci_high),
        *(f"{figure:.4f}" for figure in (row.ci_low, row.ci_high, row.score)),
    )


def _coverage(row, value, hardware):
    return format_html('<td class="num">{}/{}</td>', row.attempted, row.problem_count)


def _gap(row, value, hardware):
    positive = " gap-positive" if value > 0 else ""
    return format_html('<td class="num{}">{}</td>', positive, arena_format.signed_percent(value))


def _runs(row, value, hardware):
    query = {"hardware": hardware.slug, "model": row.model_slug, "harness": row.harness_slug}
    query |= {"effort": row.effort} if row.effort else {}
    return format_html(
        '<td class="num"><a href="{}?{}" title="The published runs of this configuration on {}">'
        "{}</a></td>",
        reverse("submissions:run-index"),
        urlencode(query),
        hardware.name,
        arena_format.thousands(value),
    )


CELLS = {
    "rank": _rank,
    "config": _config,
    "score": _score,
    "interval": _interval,
    "coverage": _coverage,
    "gap": _gap,
    "runs": _runs,
}
