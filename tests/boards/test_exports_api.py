"""The boards' read API: JSON and CSV exports, cache validators, errors, the OpenAPI schema."""

import csv
import io
from dataclasses import fields

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from submissions.boards import snapshot
from submissions.boards.exports import MATRIX_COLUMNS, ProblemRun, problem_runs
from submissions.boards.snapshot import BoardRow
from submissions.models import ShapeResult

pytestmark = pytest.mark.django_db

BOARD = "/api/v1/boards/h100-sxm/"
MATRIX = "/api/v1/boards/h100-sxm/matrix/"
SOFTMAX_RUNS = "/api/v1/boards/h100-sxm/problems/softmax/"


@pytest.fixture
def client() -> APIClient:
    return APIClient()


@pytest.fixture
def runs(grade):
    return [
        grade(score=0.6, cost_usd=2.5, speedups=((2.0, 1.2),)),
        grade(model="claude", score=0.3),
        grade(model="claude", problem="gemm", verdict="build_error"),
    ]


def table(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_the_board_as_json(client, runs):
    body = client.get(BOARD, {"sort": "score"}).json()

    assert body["hardware"] == {"slug": "h100-sxm", "name": "NVIDIA H100 SXM"}
    assert [row["config_key"] for row in body["rows"]] == [
        "gpt-5/codex-cli/",
        "claude-opus-4-5/codex-cli/",
    ]
    assert body["rows"][0]["score"] == pytest.approx(0.3)
    assert body["rows"][0]["median_cost_usd"] == 2.5
    assert (body["sort"], body["descending"]) == ("score", True)
    assert [problem["slug"] for problem in body["problems"]] == ["gemm", "softmax"]


def test_the_board_as_csv(client, runs):
    response = client.get(BOARD, {"format": "csv"})

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="board-h100-sxm.csv"' in response["Content-Disposition"]
    header, *rows = table(response)
    assert header == ["rank", *(f.name for f in fields(BoardRow) if f.name != "rank")]
    assert [row[header.index("config_key")] for row in rows] == [
        "gpt-5/codex-cli/",
        "claude-opus-4-5/codex-cli/",
    ]
    assert rows[1][header.index("median_cost_usd")] == ""


def test_the_board_export_applies_the_filters(client, runs):
    body = client.get(BOARD, {"model": "claude-opus-4-5", "category": "cuda-to-cuda"}).json()

    assert body["filters"]["model"] == ["claude-opus-4-5"]
    (row,) = body["rows"]
    assert (row["config_key"], row["problem_count"], row["score"]) == (
        "claude-opus-4-5/codex-cli/",
        1,
        0.0,
    )


def test_the_matrix_as_json_and_as_csv(client, runs):
    body = client.get(MATRIX, {"stat": "median"}).json()
    header, *lines = table(client.get(MATRIX, {"format": "csv"}))

    assert body["stat"] == "median"
    claude = next(row for row in body["rows"] if row["config_key"].startswith("claude"))
    assert [cell["failure"] for cell in claude["cells"]] == ["build", None]
    assert header == list(MATRIX_COLUMNS)
    assert len(lines) == 2 * 2
    cell = {name: value for name, value in zip(header, lines[0], strict=True)}
    assert (cell["problem"], cell["failure"], cell["run_uuid"]) == ("gemm", "not_run", "")


def test_a_problems_ranked_runs_as_json_and_as_csv(client, runs):
    body = client.get(SOFTMAX_RUNS).json()
    header, *lines = table(client.get(SOFTMAX_RUNS, {"format": "csv"}))

    assert body["problem"]["slug"] == "softmax"
    assert [run["run_uuid"] for run in body["runs"]] == [str(runs[0].uuid), str(runs[1].uuid)]
    assert [run["rank"] for run in body["runs"]] == [1, 2]
    assert header == ["rank", *(f.name for f in fields(ProblemRun) if f.name != "rank")]
    assert [line[header.index("run_uuid")] for line in lines] == [
        str(runs[0].uuid),
        str(runs[1].uuid),
    ]


def test_no_export_shows_a_held_out_shapes_parameters(client, runs):
    evaluation_id = runs[0].headline_evaluation_id
    ShapeResult.objects.create(
        evaluation_id=evaluation_id, set="hidden", index=0, params={"n": 77777}, correct=True
    )
    snapshot.refresh_board(hardware_id=runs[0].hardware_id)

    for url in (BOARD, MATRIX, SOFTMAX_RUNS):
        for form in ("json", "csv"):
            assert "77777" not in client.get(url, {"format": form}).content.decode()


@pytest.mark.parametrize("url", [BOARD, MATRIX, SOFTMAX_RUNS])
def test_an_unchanged_export_answers_304_to_its_etag(client, runs, url):
    first = client.get(url)

    again = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])

    assert first.status_code == 200
    assert again.status_code == 304
    assert again["ETag"] == first["ETag"]
    assert again.content == b""


def test_an_unchanged_export_answers_304_to_its_date(client, runs):
    first = client.get(BOARD)

    again = client.get(BOARD, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])

    assert again.status_code == 304


def test_a_refreshed_board_answers_in_full_again(client, runs, grade):
    first = client.get(BOARD)
    grade(score=0.9)
    snapshot.refresh_board(hardware_id=runs[0].hardware_id)

    again = client.get(BOARD, HTTP_IF_NONE_MATCH=first["ETag"])

    assert again.status_code == 200
    assert again["ETag"] != first["ETag"]


def test_each_form_and_filter_has_its_own_etag(client, runs):
    tags = {
        client.get(BOARD)["ETag"],
        client.get(BOARD, {"format": "csv"})["ETag"],
        client.get(BOARD, {"harness": "codex-cli"})["ETag"],
    }

    assert len(tags) == 3


def test_exports_ask_caches_to_revalidate(client, runs):
    response = client.get(BOARD)

    assert "no-cache" in response["Cache-Control"]
    assert "Accept" in response["Vary"]


@pytest.mark.parametrize("url", [BOARD, MATRIX, SOFTMAX_RUNS])
def test_an_unranked_or_unknown_target_is_404_naming_the_ranked_ones(client, arena, url):
    for slug in ("a100", "nope"):
        response = client.get(url.replace("h100-sxm", slug))

        assert response.status_code == 404
        detail = response.json()["detail"]
        assert f"No ranked hardware target '{slug}'" in detail
        assert "ranked targets: h100-sxm" in detail


def test_an_unknown_or_retired_problem_is_404(client, arena):
    for slug in ("nope", "retired"):
        response = client.get(f"/api/v1/boards/h100-sxm/problems/{slug}/")

        assert response.status_code == 404
        assert response.json()["detail"] == f"No active problem '{slug}'."


def test_malformed_parameters_are_400(client, arena):
    assert client.get(BOARD, {"since": "yesterday"}).json() == {
        "detail": "'yesterday' is not a date (YYYY-MM-DD)"
    }
    assert client.get(MATRIX, {"stat": "mean"}).status_code == 400


def test_an_error_asked_for_as_csv_is_a_csv_table(client, arena):
    response = client.get("/api/v1/boards/nope/", {"format": "csv"})

    assert response.status_code == 404
    assert table(response)[0] == ["detail"]


@pytest.mark.parametrize("url", [BOARD, f"{MATRIX}?harness=codex-cli", SOFTMAX_RUNS])
def test_an_export_takes_as_many_queries_at_any_data_size(client, runs, grade, url):
    snapshot.refresh_board(hardware_id=runs[0].hardware_id)
    with CaptureQueriesContext(connection) as small:
        assert client.get(url).status_code == 200
    for n in range(8):
        grade(model=("gpt", "claude")[n % 2], problem=("softmax", "gemm")[n % 3 % 2])
    snapshot.refresh_board(hardware_id=runs[0].hardware_id)

    with CaptureQueriesContext(connection) as large:
        assert client.get(url).status_code == 200
    assert len(large) == len(small)


def test_the_openapi_schema_documents_the_board_exports(client):
    paths = client.get("/api/v1/schema/", {"format": "json"}).json()["paths"]

    board = paths["/api/v1/boards/{hardware}/"]["get"]
    assert {"application/json", "text/csv"} <= set(board["responses"]["200"]["content"])
    rows = board["responses"]["200"]["content"]["application/json"]["schema"]["properties"]
    assert "ci_low" in rows["rows"]["items"]["properties"]
    assert {"304", "404"} <= set(board["responses"])
    assert "/api/v1/boards/{hardware}/matrix/" in paths
    assert "/api/v1/boards/{hardware}/problems/{problem}/" in paths


def test_equal_scores_share_a_rank_the_earlier_run_first(arena, grade):
    first = grade(score=0.5)
    second = grade(score=0.5)
    grade(score=0.7, model="claude")
    failed = grade(score=0.9, verdict="incorrect_hidden")
    grade(problem="gemm", score=0.9)

    result = problem_runs(problem=arena.softmax, hardware=arena.h100)

    assert [(run.rank, run.score) for run in result.runs] == [
        (1, 0.7),
        (2, 0.5),
        (2, 0.5),
        (4, 0.0),
    ]
    assert [run.run_uuid for run in result.runs[1:]] == [
        str(first.uuid),
        str(second.uuid),
        str(failed.uuid),
    ]
    last = result.runs[-1]
    assert (last.verdict, last.hidden_score, last.correct_visible) == (
        "incorrect_hidden",
        None,
        True,
    )
