"""Every page type in headless Chromium against the live server, with boards-data's synthetic
history: charts drawn, board state in the URL, matrix cells leading to runs, no request leaving
the site."""

import os
import re
from pathlib import Path

import pytest
from django.urls import reverse

from bench.synthetic_history import write_history
from tests.factories import make_evaluation, make_result
from tests.pages.conftest import synthetic_run
from tests.submissions.test_transcript_pages import parsed_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="module")
def browser():
    if os.environ.get("ARENA_SKIP_BROWSER") == "1":
        pytest.skip("ARENA_SKIP_BROWSER=1")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (or ARENA_SKIP_BROWSER=1)")
    # Playwright's sync API keeps an event loop on this thread; each test's ORM work is done
    # before it drives the browser.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()
    del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


@pytest.fixture
def visit(browser, live_server):
    """A fresh browser context that records every request and every script error."""
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    seen = {"requests": [], "errors": []}
    context.on("request", lambda request: seen["requests"].append(request.url))
    page = context.new_page()
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    page.on("console", lambda msg: msg.type == "error" and seen["errors"].append(msg.text))
    page.seen = seen
    yield page
    context.close()
    foreign = [url for url in seen["requests"] if not url.startswith(live_server.url + "/")]
    assert foreign == []


def open_page(page, url: str, status: int = 200):
    response = page.goto(url, wait_until="load")
    assert response.status == status, url
    charts = page.locator(".chart").count()
    if charts:
        page.wait_for_function(
            "n => document.querySelectorAll('.chart.drawn .main-svg').length >= n", arg=charts
        )
    return charts


def test_every_page_type_loads_and_draws_its_charts(visit, live_server, history):
    run = synthetic_run(regraded=True)
    transcript = reverse("submissions:run-transcript", kwargs={"run_id": run.uuid})
    pages = {
        "/": 1,  # fast_p
        "/boards/h200/": 1,
        "/boards/h100-sxm/matrix/": 0,
        "/boards/h100-sxm/charts/": 3,
        "/problems/": 0,
        "/problems/softmax/": 3,
        "/problems/rmsnorm/?hardware=cpu": 3,
        "/models/": 0,
        "/models/claude-opus-4-5/": 0,
        "/harnesses/": 0,
        "/harnesses/codex-cli/": 0,
        "/runs/": 0,
        "/runs/?verdict=ok&sort=-score": 0,
        "/submit/": 0,
        "/scoring/": 0,
        run.get_absolute_url(): 1,
    }
    for url, charts in pages.items():
        assert open_page(visit, live_server.url + url) == charts, url
        assert visit.locator("header.site-header nav a").count() == 10  # with Submit and Scoring
    assert visit.seen["errors"] == []
    open_page(visit, live_server.url + transcript, status=422)
    assert visit.get_by_role("link", name="← Back to the run").get_attribute("href") == (
        run.get_absolute_url()
    )
    assert live_server.url + "/static/vendor/plotly.min.js" in visit.seen["requests"]
    assert live_server.url + "/static/favicon.svg" in visit.seen["requests"]


# Boxes that must never cover each other: column headers, the site's links, headings.
OVERLAPS = """() => {
  const boxes = [...document.querySelectorAll('th, header.site-header a, nav.site a, h1, h2')]
    .map(e => [e, e.getBoundingClientRect()]).filter(([e, r]) => r.width && r.height);
  const found = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const [a, r] = boxes[i], [b, s] = boxes[j];
    if (a.contains(b) || b.contains(a)) continue;
    const x = Math.min(r.right, s.right) - Math.max(r.left, s.left);
    const y = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
    if (x > 1 && y > 1) found.push(a.textContent.trim() + ' / ' + b.textContent.trim());
  }
  return found;
}"""


# On failure, what sticks out: the chain of boxes (outside any scrolling box) past the screen.
WIDEST = """() => {
  const found = [];
  const walk = (parent, depth) => {
    for (const e of parent.children) {
      if (getComputedStyle(e).overflowX != 'visible') continue;
      const left = e.getBoundingClientRect().left;
      if (left + e.scrollWidth <= innerWidth + 1) continue;
      found.push(`${depth} ${e.tagName}.${e.className}#${e.id} ${left | 0}+${e.scrollWidth}`);
      walk(e, depth + 1);
    }
  };
  walk(document.body, 0);
  return found.slice(0, 12);
}"""


@pytest.mark.parametrize("width, height", [(1440, 900), (390, 844)])
def test_every_page_type_fits_a_laptop_and_a_phone(browser, live_server, history, width, height):
    run = synthetic_run()
    parsed = parsed_run()
    make_evaluation(parsed, result=make_result())
    transcript = reverse("submissions:run-transcript", kwargs={"run_id": parsed.uuid})
    pages = [
        "/", "/boards/h100-sxm/", "/boards/h100-sxm/matrix/", "/boards/h100-sxm/charts/",
        "/problems/", "/problems/softmax/", "/models/", "/models/claude-opus-4-5/",
        "/harnesses/", "/harnesses/codex-cli/", "/runs/", "/submit/", "/scoring/",
        run.get_absolute_url(), parsed.get_absolute_url(), transcript, "/no-such-page/",
    ]  # fmt: skip
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        for url in pages:
            response = page.goto(live_server.url + url, wait_until="load")
            assert response.status == (404 if url == "/no-such-page/" else 200), url
            header = "nav.site" if url == transcript else "header.site-header"
            assert page.locator(header).count() == 1, url
            wide = page.evaluate("document.documentElement.scrollWidth")
            assert wide <= width, f"{url}: {wide} px at {width}: {page.evaluate(WIDEST)}"
            assert page.evaluate(OVERLAPS) == [], url
    finally:
        context.close()


def test_sorting_the_board_goes_into_the_url_and_survives_a_reload(visit, live_server, history):
    open_page(visit, live_server.url + "/boards/h100-sxm/")
    visit.locator("th a.sort", has_text="vs eager").click()
    visit.wait_for_url(re.compile(r"sort=speedup_eager"))
    assert sorted_by(visit) == ("vs eager", "descending")
    descending = column(visit, 9)
    visit.reload()
    assert sorted_by(visit) == ("vs eager", "descending")
    assert column(visit, 9) == descending
    visit.locator("th[aria-sort] a.sort").click()
    visit.wait_for_url(re.compile(r"dir=asc"))
    assert sorted_by(visit) == ("vs eager", "ascending")
    assert column(visit, 9) == list(reversed(descending))


def test_filtering_the_board_goes_into_the_url_and_survives_a_reload(visit, live_server, history):
    open_page(visit, live_server.url + "/boards/h100-sxm/?sort=score")
    everyone = set(column(visit, 2))
    visit.select_option("select[name=provider]", ["OpenAI"])
    visit.fill("input[name=since]", "2020-01-01")
    visit.get_by_role("button", name="Apply").click()
    visit.wait_for_url(re.compile(r"provider=OpenAI"))
    assert "since=2020-01-01" in visit.url and "sort=score" in visit.url
    models = set(column(visit, 2))
    assert models and models < everyone and all(name.startswith("GPT-5") for name in models)
    visit.reload()
    assert visit.locator("select[name=provider] option:checked").all_inner_texts() == ["OpenAI"]
    assert visit.input_value("input[name=since]") == "2020-01-01"
    assert set(column(visit, 2)) == models
    assert sorted_by(visit) == ("Score", "descending")


def test_a_matrix_cell_leads_to_the_run_behind_it(visit, live_server, history):
    open_page(visit, live_server.url + "/boards/h100-sxm/matrix/")
    cell = visit.locator("td.cell.score a").first
    score = cell.inner_text().split("\n")[0]
    cell.click()
    visit.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    assert visit.locator(".headline .stat.score b").inner_text() == score
    assert visit.locator(".headline", has_text="Rank on").count() == 1


def test_a_board_filter_carries_over_to_the_matrix_and_charts(visit, live_server, deck):
    write_history(runs_per_cell=1, seed=5)
    open_page(visit, live_server.url + "/boards/h100-sxm/?model=gpt-5")
    visit.get_by_role("link", name="Charts", exact=True).last.click()
    visit.wait_for_url(re.compile(r"/boards/h100-sxm/charts/\?model=gpt-5$"))
    open_page(visit, visit.url)
    visit.get_by_role("link", name="Model \u00d7 problem matrix").click()
    visit.wait_for_url(re.compile(r"/matrix/\?model=gpt-5$"))
    rows = visit.locator("table.matrix tbody td.config > a:first-child").all_inner_texts()
    assert rows and set(rows) == {"GPT-5"}


def sorted_by(page) -> tuple[str, str]:
    header = page.locator("th[aria-sort]")
    return header.inner_text().rstrip("▲▼ "), header.get_attribute("aria-sort")


def column(page, n: int) -> list[str]:
    cells = page.locator(f"table.board tbody tr td:nth-child({n})").all_inner_texts()
    return [cell.split("\n")[0].strip() for cell in cells]
