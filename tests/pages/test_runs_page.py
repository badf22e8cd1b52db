"""The runs page: every published run with its verdict and scores, filtered with the API's own
filters, sorted and paged in the URL; board rows lead to the runs behind them and the board links
its problems and its export."""

import re

import pytest

from submissions.boards.snapshot import refresh_board
from submissions.models import Run
from submissions.pages import runs as runs_page
from tests.boards.factories import make_graded_run
from tests.factories import make_hardware, make_harness, make_language_model, make_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def listed():
    softmax, gemm = make_problem("softmax"), make_problem("gemm", regime="compute")
    gpt = make_language_model("gpt-5", display_name="GPT-5", provider="OpenAI")
    claude = make_language_model("claude-opus-4-5", display_name="Claude Opus 4.5")
    codex = make_harness("codex-cli", name="Codex CLI", version="")
    claude_code = make_harness("claude-code", name="Claude Code", version="")
    h100 = make_hardware("h100-sxm", name="NVIDIA H100 SXM")
    made = {
        "best": make_graded_run(problem=softmax, model=gpt, harness=codex, hardware=h100),
        "wrong": make_graded_run(
            problem=gemm, model=claude, harness=claude_code, hardware=h100, verdict="incorrect"
        ),
        "fair": make_graded_run(problem=gemm, model=gpt, harness=codex, hardware=h100, score=0.3),
        "hidden": make_graded_run(
            problem=gemm, model=gpt, harness=codex, hardware=h100, published=False
        ),
    }
    Run.objects.update(status=Run.Status.EVALUATED)
    refresh_board(hardware_id=h100.pk)
    return made


def rows(html: str) -> list[str]:
    """The run ids of the table's rows, in order."""
    return re.findall(r'<td><a href="/runs/([0-9a-f-]+)/">', html)


def ids(listed, *names) -> list[str]:
    return [str(listed[name].uuid) for name in names]


def test_the_runs_page_lists_published_runs_with_verdict_and_scores(client, listed):
    html = client.get("/runs/").content.decode()
    assert rows(html) == ids(listed, "fair", "wrong", "best")  # newest first
    assert '<p class="hint">3 runs</p>' in html
    assert '<span class="verdict verdict-incorrect">Incorrect</span>' in html
    assert '<td class="num">0.300</td>' in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?verdict=ok", ("fair", "best")),
        ("?model=gpt-5&sort=-score", ("best", "fair")),
        ("?sort=score", ("wrong", "fair", "best")),
        ("?problem=gemm&harness=claude-code", ("wrong",)),
        ("?sort=nonsense", ("fair", "wrong", "best")),  # an unknown sort is the default
    ],
)
def test_filters_and_sorting_come_from_the_url(client, listed, query, expected):
    assert rows(client.get("/runs/" + query).content.decode()) == ids(listed, *expected)


def test_the_runs_page_says_how_many_runs_are_being_graded(client, listed):
    assert "being graded now" not in client.get("/runs/").content.decode()
    Run.objects.filter(pk=listed["hidden"].pk).update(status=Run.Status.EVALUATING)
    html = client.get("/runs/").content.decode()
    assert "1 run is being graded now; each appears here once graded and published." in html


def test_a_bad_filter_value_says_so_and_lists_nothing(client, listed):
    response = client.get("/runs/?verdict=bogus")
    html = response.content.decode()
    assert response.status_code == 200 and rows(html) == []
    assert "verdict: Select a valid choice. bogus is not one of the available choices." in html


def test_pages_keep_the_filters(client, listed, monkeypatch):
    monkeypatch.setattr(runs_page, "RUNS_PER_PAGE", 1)
    html = client.get("/runs/?model=gpt-5").content.decode()
    assert rows(html) == ids(listed, "fair")
    assert '<a href="?model=gpt-5&amp;page=2" rel="next">' in html
    second = client.get("/runs/?model=gpt-5&page=2").content.decode()
    assert rows(second) == ids(listed, "best") and 'rel="prev"' in second


def test_the_runs_page_takes_as_many_queries_at_any_size(client, listed, django_assert_num_queries):
    # session-less: the page, its count, the four filter lists and the runs in grading
    with django_assert_num_queries(7):
        assert client.get("/runs/?sort=-score").status_code == 200


def test_board_rows_lead_to_their_runs_and_the_board_to_its_problems_and_export(client, listed):
    html = client.get("/boards/h100-sxm/").content.decode()
    link = "/runs/?hardware=h100-sxm&amp;model=gpt-5&amp;harness=codex-cli"
    assert f'<a href="{link}"' in html
    behind = client.get(link.replace("&amp;", "&")).content.decode()
    assert rows(behind) == ids(listed, "fair", "best")
    assert '<a href="/problems/gemm/?hardware=h100-sxm">' in html
    assert '<a href="/api/v1/boards/h100-sxm/?format=csv">CSV</a>' in html


def test_a_cpu_grade_shows_correctness_and_its_smoke_timing_not_a_roofline(client, listed):
    cpu = make_hardware("cpu-smoke", name="CPU", device="cpu", is_ranked=False, queue_name="cpu")
    run = listed["best"]
    cpu_run = make_graded_run(
        problem=run.problem,
        model=run.language_model,
        harness=run.harness,
        hardware=cpu,
        score=1.2e-6,
        speedups=((4.59e-5, 1e-5),),
    )
    html = client.get(cpu_run.get_absolute_url()).content.decode()
    assert "1.2e-6" in html and 'class="hint cpu-note"' in html
    assert '<th class="num">TFLOPS</th>' not in html and "vs eager" not in html
    gpu_run = make_graded_run(
        problem=run.problem,
        model=run.language_model,
        harness=run.harness,
        hardware=run.hardware,
        speedups=((1.5, 1.1),),
    )
    gpu = client.get(gpu_run.get_absolute_url()).content.decode()
    assert '<th class="num">TFLOPS</th>' in gpu and "cpu-note" not in gpu
