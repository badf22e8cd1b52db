"""Inputs the fuzzers found, kept as plain cases."""

import pytest

from tests.factories import make_run

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("query", "count"),
    [
        ("created_after=3905-05-15T01:51:03%2B21:27", 0),  # PostgreSQL allows up to 15:59
        ("created_before=2999-01-01T00:00-23:59", 1),
        ("created_after=9999-12-31T23:00-05:00", 0),  # past year 9999 once in UTC
        ("created_before=9999-12-31T23:00-05:00", 1),
        ("created_after=0001-01-01T00:00%2B05:00", 1),  # before year 1 once in UTC
        ("created_before=0001-01-01T00:00%2B05:00", 0),
    ],
)
def test_run_list_dates_with_any_offset_filter_instead_of_failing(client, query, count):
    make_run()
    response = client.get(f"/api/v1/runs/?{query}")
    assert response.status_code == 200
    assert response.json()["count"] == count


@pytest.mark.parametrize(
    "url",
    [
        "/problems/softmax/?hardware=%00",  # 500 on PostgreSQL before: NUL in a text query
        "/runs/?model=a%00b",
        "/boards/h100-sxm/?harness=%00",
        "/api/v1/runs/?problem=%00",
        "/runs/?%00=1",
    ],
)
def test_a_nul_in_a_query_parameter_is_a_clear_400(client, url):
    make_run()
    response = client.get(url)
    assert response.status_code == 400
    assert "NUL character" in response.content.decode()


@pytest.mark.parametrize(
    "path",
    ["annotations", "invalidate", "reevaluate", "lineage/grade", None],  # those that read it
)
def test_json_nested_past_the_recursion_limit_is_a_400_on_every_post(path):
    from rest_framework.test import APIClient

    from tests.factories import make_superuser

    run = make_run()
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(make_superuser())
    url = f"/api/v1/runs/{run.uuid}/{path}/" if path else "/api/v1/runs/"
    body = "[" * 100_000 + "]" * 100_000  # a 500 before: RecursionError out of the parser
    response = client.post(url, data=body, content_type="application/json")
    assert response.status_code == 400
    assert "nests too deeply" in response.json()["detail"]
