"""Board table headers that sort by a link: every state stays in the query string."""

from django import template
from django.utils.html import format_html

register = template.Library()

ARROWS = {True: "▼", False: "▲"}


@register.simple_tag(takes_context=True)
def sort_header(context, board, key: str, label: str, title: str = "", numeric: bool = True):
    """A ``<th>`` whose link sorts the board by ``key``; on the sorted column it reverses the
    direction. Filters in the current query string are kept."""
    query = context["request"].GET.copy()
    query["sort"] = key
    current = board.sort == key
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
        "num" if numeric else "",
        sorting,
        title,
        query.urlencode(),
        label,
        arrow,
    )
