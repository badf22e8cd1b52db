"""The rendered page in headless Chromium: no network, no injected script, search, nesting."""

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect
from viewer_cases import (
    DEEP_EVENT_ID,
    DEEP_MARKER,
    LONG_OUTPUT,
    LONG_OUTPUT_ID,
    hostile_context,
    hostile_session,
)

from transcripts.model import Kind
from transcripts.parsers import parse_files
from transcripts.render import render_html

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
EDITS = Path(__file__).parent / "samples" / "claude-jsonl-edits-3fe1b6bc.jsonl"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="module")
def browser():
    if os.environ.get("ARENA_SKIP_BROWSER") == "1":
        pytest.skip("ARENA_SKIP_BROWSER=1")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (or ARENA_SKIP_BROWSER=1)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("viewer") / "hostile.html"
    path.write_text(render_html(hostile_session(), context=hostile_context()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sample_page(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("viewer") / "sample.html"
    path.write_text(render_html(parse_files([EDITS]), context={}), encoding="utf-8")
    return path


def open_page(browser, path: Path, fragment: str = ""):
    context = browser.new_context()
    seen = {"requests": [], "dialogs": [], "errors": []}
    context.on("request", lambda request: seen["requests"].append(request.url))
    context.route("**/*", lambda route: _only_the_page(route, path))
    page = context.new_page()
    page.on("dialog", lambda dialog: (seen["dialogs"].append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    page.on("console", lambda msg: msg.type == "error" and seen["errors"].append(msg.text))
    page.goto(path.as_uri() + fragment, wait_until="load")
    return page, seen


def _only_the_page(route, path: Path) -> None:
    if route.request.url.split("#")[0] == path.as_uri():
        route.continue_()
    else:
        route.abort()


def test_hostile_transcript_runs_no_injected_script_and_makes_no_request(browser, hostile_page):
    page, seen = open_page(browser, hostile_page)
    page.click("#expand-all")
    page.fill("#search", "onerror")
    page.press("#search", "Enter")
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.__xss") == "undefined"
    expect(page.locator(f"text={DEEP_MARKER}")).to_be_visible()
    assert "window.__xss=1" in page.inner_text("#timeline")
    assert (
        page.locator("#timeline script, #timeline img, #timeline iframe, #timeline svg").count()
        == 0
    )
    assert seen["dialogs"] == []
    assert seen["errors"] == []
    assert seen["requests"] == [hostile_page.as_uri()]
    page.context.close()


def test_search_reveals_a_match_far_down_the_timeline(browser, sample_page):
    last = [e for e in parse_files([EDITS]).events if e.kind == Kind.ASSISTANT][-1]
    page, _seen = open_page(browser, sample_page)
    assert page.locator(f"#e-{last.id}").count() == 0  # not rendered until needed
    page.fill("#search", max(last.text.splitlines(), key=len)[:40])
    page.press("#search", "Enter")
    target = page.locator(f"#e-{last.id}")
    expect(target).to_be_visible()
    assert "target" in target.get_attribute("class")
    expect(page.locator("#search-count")).to_contain_text("of 1 matches")
    page.fill("#search", "metrics")
    page.press("#search", "Enter")
    expect(page.locator("#search-count")).to_have_text(re.compile(r"^1 of "))
    assert page.locator("#search-results li").count() > 1
    page.context.close()


def test_kind_and_tool_filters_leave_only_the_edit_calls(browser, sample_page):
    page, _seen = open_page(browser, sample_page)
    for box in page.locator("#kind-filters input").all():
        if box.get_attribute("value") != Kind.TOOL_CALL:
            box.uncheck()
    page.select_option("#tool-filter", "Edit")
    events = page.locator("#timeline article.ev")
    expect(events).to_have_count(18)
    assert page.locator("#timeline article.ev .diff-wrap").count() == 18
    assert set(page.locator("#timeline article.ev .tool").all_inner_texts()) == {"Edit"}
    page.context.close()


def test_subagent_sections_expand_two_levels_deep(browser, hostile_page):
    page, _seen = open_page(browser, hostile_page)
    outer = page.locator("#timeline > article.ev details.subagent").first
    outer.locator("> summary").click()
    inner = outer.locator("details.subagent").first
    assert "inner-type" in inner.locator("> summary").inner_text()
    inner.locator("> summary").click()
    expect(page.locator(f"#e-{DEEP_EVENT_ID}")).to_be_visible()
    page.context.close()


def test_permalink_opens_the_collapsed_parents_of_its_event(browser, hostile_page):
    page, _seen = open_page(browser, hostile_page, f"#e-{DEEP_EVENT_ID}")
    target = page.locator(f"#e-{DEEP_EVENT_ID}")
    expect(target).to_be_visible()
    assert page.locator("details.subagent[open]").count() == 2
    assert page.evaluate("location.hash") == f"#e-{DEEP_EVENT_ID}"
    page.context.close()


def test_permalink_far_down_renders_a_window_and_earlier_events_on_demand(browser, sample_page):
    events = parse_files([EDITS]).events
    page, _seen = open_page(browser, sample_page, f"#e-{events[-1].id}")
    expect(page.locator(f"#e-{events[-1].id}")).to_be_visible()
    shown = page.locator("#timeline article.ev").count()
    assert shown < len(events)
    first = page.locator(f"#e-{events[0].id}")
    for _ in range(50):
        if first.count():
            break
        page.mouse.wheel(0, -5000)
        page.wait_for_timeout(100)
    assert first.count() == 1
    assert page.locator("#timeline article.ev").count() > shown
    page.context.close()


def test_long_output_is_collapsed_until_show_all(browser, hostile_page):
    page, _seen = open_page(browser, hostile_page)
    event = page.locator(f"#e-{LONG_OUTPUT_ID}")
    assert "output line 499" not in event.inner_text()
    event.locator("button.show-all").click()
    assert event.locator("pre").inner_text() == LONG_OUTPUT
    page.context.close()
