"""Every page type answers with a number of SQL queries that does not grow with the data."""

import pytest

from bench.synthetic_history import write_history
from tests.pages.conftest import synthetic_run

pytestmark = pytest.mark.django_db

QUERY = "?sort=score&dir=asc&provider=OpenAI&category=pytorch-to-kernel&since=2020-01-01"
# page: the queries it makes (hardware tabs, snapshot, registry choices, demo runs, rows...)
PAGES = {
    "/": 7,  # the filter form's budgets included
    "/boards/h200/" + QUERY: 7,
    "/boards/h100-sxm/matrix/": 7,
    "/boards/h100-sxm/matrix/?stat=median&model=gpt-5": 7,
    "/boards/h100-sxm/charts/": 8,
    "/problems/": 1,
    "/problems/softmax/": 5,  # with the lineage curves of the top configurations
    "/problems/softmax/?hardware=cpu": 6,
    "/models/": 3,
    "/harnesses/": 3,
    "/models/gpt-5/": 4,
    "/harnesses/codex-cli/": 4,
    "/runs/": 7,  # the page, its count, the four filter lists and the runs in grading
    "run": 7,  # with the run's annotations and its lineage gradings
    "transcript": 5,
}


def page_url(page: str) -> str:
    run = synthetic_run()
    if page == "run":
        return run.get_absolute_url()
    if page == "transcript":
        return run.get_absolute_url() + "transcript/"
    return page


@pytest.mark.parametrize("page", PAGES)
def test_a_page_makes_as_many_queries_with_three_times_the_runs(
    client, deck, page, django_assert_num_queries
):
    sizes = []
    for runs_per_cell in (1, 3):
        sizes.append(write_history(runs_per_cell=runs_per_cell, seed=5).runs)
        url = page_url(page)
        with django_assert_num_queries(PAGES[page]):
            response = client.get(url)
        assert response.status_code == (422 if page == "transcript" else 200), url
    assert sizes[1] > 2 * sizes[0]
