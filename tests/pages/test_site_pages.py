"""What each page shows, read from the server's HTML."""

import hashlib
import json
import re

import pytest
from django.contrib.staticfiles import finders
from django.core.files.base import ContentFile
from django.urls import reverse

from bench.synthetic_history import write_history
from submissions.boards import refresh_board
from submissions.models import Run, Solution
from submissions.pages.staticfiles import PACKAGE_DATA, PlotlyFinder
from tests.factories import make_evaluation, make_result
from tests.pages.conftest import synthetic_run
from tests.submissions.test_transcript_pages import parsed_run

pytestmark = pytest.mark.django_db

NAV = ["Board", "Matrix", "Problems", "Charts", "Models", "Harnesses", "Runs", "Submit", "Scoring"]
NAV += ["API docs"]
SCRIPT = re.compile(r"<script\b([^>]*)>", re.IGNORECASE)


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def figure(html: str, element_id: str) -> dict:
    found = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S
    )
    assert found, element_id
    return json.loads(found.group(1))


def test_every_page_has_the_site_header_footer_and_icon(client, history):
    html = page(client, "/")
    nav = re.search(r'<nav aria-label="Site">(.*?)</nav>', html, re.S).group(1)
    assert [re.sub(r"<[^>]+>", "", link) for link in re.findall(r"<a [^>]*>.*?</a>", nav)] == NAV
    footer = re.search(r'<footer class="site-footer">(.*?)</footer>', html, re.S).group(1)
    assert 'href="/api/v1/docs/">API</a>' in footer and "/api/v1/runs/" not in footer
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html


def test_the_footer_api_link_and_the_favicon_answer(client):
    assert client.get("/api/v1/docs/").status_code == 200
    icon = client.get("/favicon.ico")
    assert icon.status_code == 302 and icon["Location"] == "/static/favicon.svg"


def test_pages_run_no_inline_script_only_static_files_and_json_data(client, history):
    run = synthetic_run(regraded=True)
    urls = ["/", "/boards/h100-sxm/matrix/", "/boards/h100-sxm/charts/", "/problems/softmax/"]
    for url in [*urls, "/models/gpt-5/", run.get_absolute_url()]:
        for attributes in SCRIPT.findall(page(client, url)):
            assert 'type="application/json"' in attributes or 'src="/static/' in attributes, url


def test_the_home_page_is_the_first_ranked_board(client, history):
    html = page(client, "/")
    assert 'aria-current="page">NVIDIA H100 SXM</a>' in html
    assert 'href="/boards/h200/"' in html
    assert "How scores are computed" in html and "docs/evaluation.md" in html
    assert html.count('<td class="num rank">') == 12


def test_board_headers_sort_by_link_and_reverse_the_sorted_column(client, history):
    html = page(client, "/boards/h100-sxm/?sort=score&provider=OpenAI")
    header = re.search(
        r'<th class="num" aria-sort="descending"[^>]*><a class="sort" href="([^"]+)"', html
    )
    assert header.group(1) == "?sort=score&amp;provider=OpenAI&amp;dir=asc"
    assert 'href="?sort=runs&amp;provider=OpenAI"' in html
    assert '<input type="hidden" name="sort" value="score">' in html


def test_board_filters_come_from_the_url_and_stay_selected(client, history):
    html = page(client, "/boards/h100-sxm/?provider=OpenAI&since=2020-01-01")
    assert "<option selected>OpenAI</option>" in html and "<option>Anthropic</option>" in html
    assert 'name="since" value="2020-01-01"' in html
    shown = re.findall(r'<td class="config"><a href="/models/([^/]+)/"', html)
    assert shown and set(shown) <= {"gpt-5", "gpt-5-codex"}
    assert "Clear filters" in html


def test_matrix_cells_link_to_their_runs_or_show_the_failure(client, history):
    html = page(client, "/boards/h100-sxm/matrix/?stat=median")
    links = re.findall(r'<td class="cell[^"]*"[^>]*><a href="(/runs/[0-9a-f-]+/)"', html)
    assert links
    published = {run.get_absolute_url() for run in Run.objects.filter(published=True)}
    assert set(links) <= published
    assert re.search(
        r'<span class="chip chip-(static|build|wrong_visible|wrong_hidden|timeout|crash|infra)">',
        html,
    )
    assert 'style="--share: ' in html


def test_the_problem_page_renders_the_statement_sanitized(client, history):
    html = page(client, "/problems/softmax/")
    statement = html.split('<div class="prose">')[1].split("</div>")[0]
    assert "<h1>Row softmax</h1>" in statement and "<code>softmax(x, dim=-1)</code>" in statement
    assert "<th>rows</th>" in statement and "<td>8192</td>" in statement
    assert "&lt;script&gt;alert" in statement and "<img" not in statement
    assert "32,768" in html  # the visible shapes table


def test_the_problem_page_draws_the_roofline_under_the_hardware_roofs(client, history):
    roofline = figure(page(client, "/problems/softmax/?hardware=h100-sxm"), "roofline-figure")
    names = [trace["name"] for trace in roofline["data"]]
    assert names[0] == "roof: 3,350 GB/s, 67.0 TFLOPS"
    assert {"runs (visible shapes)", "eager", "torch.compile"} <= set(names)
    roof = roofline["data"][0]
    assert max(roof["y"]) == 67.0 and roofline["layout"]["xaxis"]["type"] == "log"
    assert roofline["data"][1]["customdata"][0].startswith("/runs/")


def test_the_problem_page_ranks_runs_and_splits_visible_from_held_out(client, history):
    html = page(client, "/problems/softmax/")
    assert html.count('<span class="badge demo">demo</span>') > 5
    assert figure(html, "distribution-figure")["data"][0]["type"] == "bar"
    outcomes = figure(html, "outcomes-figure")
    assert [trace["name"] for trace in outcomes["data"]] == [
        "correct on both", "visible only", "held-out only", "neither"
    ]  # fmt: skip


def test_an_unranked_target_shows_on_the_problem_page_marked_unranked(client, history):
    html = page(client, "/problems/softmax/?hardware=cpu")
    assert 'aria-current="page">CPU' in html and '<span class="badge">unranked</span>' in html
    assert client.get("/problems/softmax/?hardware=nope").status_code == 404


def test_the_charts_page_marks_both_pareto_frontiers(client, history):
    html = page(client, "/boards/h100-sxm/charts/")
    for name in ("cost-figure", "tokens-figure"):
        traces = figure(html, name)["data"]
        assert traces[-1]["name"] == "Pareto frontier" and traces[-1]["line"]["shape"] == "hv"
        assert len(traces) > 5  # one per configuration, then the frontier
    boxes = figure(html, "problems-figure")["data"]
    assert {trace["type"] for trace in boxes} == {"box"}


def test_model_and_harness_pages_list_their_configurations(client, history):
    html = page(client, "/models/gpt-5/")
    assert "GPT-5 · Codex CLI · high" in html and "GPT-5 · Codex CLI · medium" in html
    assert re.search(r'<td class="cell best"><a href="/runs/[0-9a-f-]+/">', html)
    harness = page(client, "/harnesses/codex-cli/")
    assert (
        "GPT-5-Codex" in harness and "Claude" not in harness.split("<main")[1].split("</main>")[0]
    )
    assert page(client, "/models/").count('<section class="config-group">') == 7
    assert client.get("/models/nope/").status_code == 404


def test_the_run_page_heads_with_its_rank_and_formats_every_number(client, history):
    run = synthetic_run(regraded=True)
    html = page(client, run.get_absolute_url())
    rank = re.search(r"<b>#(\d+)</b> of (\d+) runs", html)
    assert rank and 1 <= int(rank.group(1)) <= int(rank.group(2))
    assert '<span class="badge demo"' in html
    assert figure(html, "history-figure")["data"][0]["mode"] == "lines+markers"
    assert not re.search(r"\d\.\d{7,}", html.split("<main")[1])  # no raw float on the page
    assert "<h4>Gates</h4>" in html and "<h4>Shapes</h4>" in html and "Environment" in html


def test_the_run_page_highlights_the_solution_and_links_the_transcript(client, deck):
    code = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"
    solution = Solution(sha256=hashlib.sha256(code.encode()).hexdigest(), size=len(code))
    solution.file.save("solution.py", ContentFile(code.encode()), save=True)
    run = parsed_run(solution=solution)
    make_evaluation(run)
    html = page(client, run.get_absolute_url())
    assert '<div class="highlight">' in html and '<span class="k">class</span>' in html
    assert f'href="/runs/{run.uuid}/transcript/">view the transcript</a>' in html
    assert '<link rel="stylesheet" href="/static/pygments.css">' in html


def test_the_run_and_transcript_pages_count_the_same_turns(client, deck):
    run = parsed_run()  # Claude Code: 67 responses over 10 typed prompts
    run_page = page(client, run.get_absolute_url())
    transcript = page(client, reverse("submissions:run-transcript", kwargs={"run_id": run.uuid}))
    assert re.search(r"<dt>Turns</dt><dd>67 ", run_page)
    assert "<th>turns</th><td>67</td>" in transcript


def test_the_transcript_page_carries_the_sites_links_absolute(client, deck):
    run = parsed_run()
    make_evaluation(run, result=make_result())
    html = page(client, reverse("submissions:run-transcript", kwargs={"run_id": run.uuid}))
    nav = re.search(r'<nav class="site" aria-label="Site">(.*?)</nav>', html).group(1)
    links = dict((label, href) for href, label in re.findall(r'<a href="([^"]+)">([^<]+)</a>', nav))
    assert list(links) == [
        "Kernel Arena", "Board", "Problems", "Models", "Harnesses", "Runs", "Submit", "Scoring"
    ]  # fmt: skip
    assert links["Runs"] == "http://testserver/runs/" and links["Scoring"].startswith("http://")


def test_held_out_cases_carry_the_same_number_on_the_run_and_transcript_pages(client, deck):
    """On the CPU only one held-out case runs, keeping the engine's index (here 1). Every label
    counts from 1 (the engine's messages too), so both pages call it "held-out case 2"."""
    run = parsed_run()
    result = make_result(hidden_params={"batch": 4099117, "dim": 12289333})
    result["shapes"][1]["index"] = 1
    make_evaluation(run, result=result)
    run_page = page(client, run.get_absolute_url())
    transcript = page(client, reverse("submissions:run-transcript", kwargs={"run_id": run.uuid}))
    assert set(re.findall(r"held-out case \d+", transcript)) == {"held-out case 2"}
    assert set(re.findall(r"held-out case \d+", run_page)) == {"held-out case 2"}


def test_the_transcript_pending_page_has_the_header_and_a_way_back(client, history):
    run = synthetic_run()
    response = client.get(reverse("submissions:run-transcript", kwargs={"run_id": run.uuid}))
    html = response.content.decode()
    assert response.status_code == 422 and '<header class="site-header">' in html
    assert f'<a href="{run.get_absolute_url()}">← Back to the run</a>' in html


def test_without_a_ranked_board_the_home_page_lists_recent_runs(client, db):
    html = page(client, "/")
    assert "No published runs yet" in html
    assert client.get("/matrix/").status_code == 404


def test_a_second_history_replaces_the_first_on_every_page(client, deck):
    write_history(runs_per_cell=1, seed=5)
    first = page(client, "/boards/h100-sxm/matrix/")
    write_history(runs_per_cell=2, seed=6)
    assert page(client, "/boards/h100-sxm/matrix/") != first


def test_the_plotly_finder_serves_the_package_copy_of_plotly_js():
    finder = PlotlyFinder()
    assert finder.check() == []
    assert finder.find("vendor/plotly.min.js") == str(PACKAGE_DATA / "plotly.min.js")
    assert finder.find("vendor/widgetbundle.js") is None
    assert [(path, storage.prefix) for path, storage in finder.list(None)] == [
        ("plotly.min.js", "vendor")
    ]


def test_plotly_js_is_a_static_file_of_the_site():
    """settings.STATICFILES_FINDERS lists submissions.pages.staticfiles.PlotlyFinder."""
    assert finders.find("vendor/plotly.min.js") == str(PACKAGE_DATA / "plotly.min.js")


def test_boards_of_synthetic_runs_say_they_are_demo_data(client, history):
    for url in ("/", "/boards/h100-sxm/matrix/", "/boards/h100-sxm/charts/"):
        html = page(client, url)
        assert "demo data" in html and "are synthetic" in html, url


def test_a_board_of_real_runs_carries_no_demo_notice(client, history):
    Run.objects.update(metadata={})
    for hardware_id in Run.objects.values_list("hardware_id", flat=True).distinct():
        refresh_board(hardware_id=hardware_id)  # the notice's counts are the board's own
    assert "are synthetic" not in page(client, "/")


def test_people_find_how_to_submit_and_how_scoring_works_from_every_page(client, history):
    for url in ("/", "/runs/", "/problems/", synthetic_run().get_absolute_url()):
        html = page(client, url)
        assert '<a href="/submit/"' in html and '<a href="/scoring/"' in html, url
    submit = page(client, "/submit/")
    assert '<a href="/submit/" aria-current="page">Submit</a>' in submit
    # the upload fields the page shows are the API's own
    for field in ("problem", "model", "harness", "hardware", "effort", "solution", "transcript"):
        assert f"-F {field}=" in submit
    assert "http://testserver/api/v1/runs/" in submit and "arena submit my-run/" in submit
    scoring = page(client, "/scoring/")
    for gate in ("static", "build", "correct_visible", "correct_hidden", "performance", "score"):
        assert f"<td>{gate}</td>" in scoring
    assert "How scores are computed" in scoring and "held-out case k" in scoring


def test_an_unknown_address_answers_the_sites_own_404_page(client):
    response = client.get("/runs/not-a-run/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "<h1>Page not found</h1>" in html and "<code>/runs/not-a-run/</code>" in html
    assert '<header class="site-header">' in html and '<a href="/runs/">every run</a>' in html
