"""The board's columns are one table (``submissions.boards.columns``): the page's headers and
cells, the sort keys and their directions, and the exports all read it. "All gates" is the
column added through it alone (with its figure in ``stats.Summary``)."""

import csv
import html
import io
import re
from dataclasses import fields

import pytest

from submissions.boards.board import board
from submissions.boards.columns import ASCENDING_FIRST, COLUMNS, MORE_SORT_KEYS, SORT_KEYS
from submissions.boards.snapshot import BoardRow
from submissions.templatetags.arena_board import CELLS, FIGURES

HEADER = re.compile(
    r'<th class="[^"]*"(?: aria-sort="\w+")? title="([^"]*)"><a class="sort" '
    r'href="\?([^"]*)">([^<]*)'
)


def test_every_column_is_a_figure_of_the_row_drawn_by_a_known_cell():
    row_fields = {field.name for field in fields(BoardRow)}
    for column in COLUMNS:
        assert column.key in row_fields, column.key
        assert column.cell in FIGURES or column.cell in CELLS, column.cell
        assert column.label and column.help
    assert {key for key, _ in MORE_SORT_KEYS} <= row_fields
    assert len(set(SORT_KEYS)) == len(SORT_KEYS)
    assert {"rank", "gap", "median_cost_usd", "model_name"} <= ASCENDING_FIRST
    assert "score" not in ASCENDING_FIRST


@pytest.mark.django_db
def test_the_page_draws_the_table_in_its_order(arena, grade, client):
    grade(score=0.6)
    grade(model="claude", verdict="timing_rejected", score=0.0)

    page = client.get("/boards/h100-sxm/").content.decode()

    headers = HEADER.findall(page)
    assert [label for _, _, label in headers] == [column.label for column in COLUMNS]
    assert [html.unescape(title) for title, _, _ in headers] == [c.help for c in COLUMNS]
    sorts = [query.split("&")[0] for _, query, _ in headers]  # the sorted one adds dir=...
    assert sorts == [f"sort={column.key}" for column in COLUMNS]
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    assert [row.count("<td") for row in rows] == [len(COLUMNS)] * 2


@pytest.mark.django_db
def test_all_gates_is_the_share_of_runs_that_passed_every_gate(arena, grade, client):
    grade(score=0.6)
    grade(verdict="timing_rejected", score=0.0)  # correct, but its timing was refused
    grade(model="claude", score=0.4)

    result = board(hardware=arena.h100, sort="pass_all")

    assert [(row.model_slug, row.pass_all) for row in result.rows] == [
        ("claude-opus-4-5", 1.0),
        ("gpt-5", 0.5),
    ]
    assert result.descending  # more is better: the first click sorts from the top
    page = client.get("/boards/h100-sxm/", {"sort": "pass_all"}).content.decode()
    assert '<td class="num">50.0 %</td>' in page
    exported = list(
        csv.DictReader(
            io.StringIO(client.get("/api/v1/boards/h100-sxm/", {"format": "csv"}).content.decode())
        )
    )
    assert {line["model_slug"]: line["pass_all"] for line in exported} == {
        "gpt-5": "0.5",
        "claude-opus-4-5": "1.0",
    }
    rows = client.get("/api/v1/boards/h100-sxm/").json()["rows"]
    assert sorted(row["pass_all"] for row in rows) == [0.5, 1.0]
