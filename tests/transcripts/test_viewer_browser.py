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

from bench.transcripts_bench import build_big_file
from transcripts.model import Event, Kind, Session
from transcripts.parsers import parse_files, session_files_for
from transcripts.render import render_html

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
SAMPLES = Path(__file__).parent / "samples"
EDITS = SAMPLES / "claude-jsonl-edits-3fe1b6bc.jsonl"
FOLDER_MAIN = (
    SAMPLES / "claude-subagents-folder-handwritten" / "7c2e9a40-1d3b-4f5e-8a6c-2b4d6f8a0c1e.jsonl"
)
ROLLOUT = SAMPLES / "codex-rollout-handwritten.jsonl"
MARKDOWN = "\n".join(
    [
        "## Plan",
        "**bold** <b>raw</b> [bad](javascript:window.__xss=1) [good](https://example.com)",
        "",
        "- first `code_span`",
        "- second with snake_case_name",
        "  1. nested",
        "",
        "| a | b |",
        "|---|--:|",
        "| 1 | 2 |",
        "",
        "```python",
        "x = '<script>window.__xss=1</script>'",
        "```",
    ]
)
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


@pytest.fixture(scope="module")
def folder_page(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("viewer") / "folder.html"
    session = parse_files(session_files_for(FOLDER_MAIN))
    path.write_text(render_html(session, context={}), encoding="utf-8")
    return path


def page_of(tmp_path: Path, session: Session) -> Path:
    path = tmp_path / "page.html"
    path.write_text(render_html(session, context={}), encoding="utf-8")
    return path


def only_kind(page, kind: str) -> None:
    for box in page.locator("#kind-filters input").all():
        if box.get_attribute("value") != kind:
            box.uncheck()


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


def test_markdown_is_formatted_in_the_page_with_raw_html_and_unsafe_links_inert(browser, tmp_path):
    events = [Event(kind=Kind.ASSISTANT, id="md", text=MARKDOWN)]
    page, seen = open_page(browser, page_of(tmp_path, Session("s", "h", "f", events=events)))
    md = page.locator("#e-md .md")
    assert md.locator("h2").inner_text() == "Plan"
    assert md.locator("strong").inner_text() == "bold"
    assert "<b>raw</b>" in md.locator("p").first.inner_text()  # shown as text, not bold
    assert md.locator("a").count() == 1
    assert md.locator("a").get_attribute("href") == "https://example.com"
    assert md.locator("ul > li").count() == 2 and md.locator("ul ol > li").inner_text() == "nested"
    assert md.locator("li code").inner_text() == "code_span"
    assert md.locator("em").count() == 0  # snake_case_name is not emphasis
    assert md.locator("table td[align=right]").inner_text() == "2"
    assert "<script>" in md.locator("pre code").inner_text()
    assert md.locator("script, b, img").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert seen["errors"] == []
    page.context.close()


def test_every_assistant_message_is_formatted_not_only_the_first(browser, tmp_path):
    """Issue 13: past the first 100,000 characters of prose, messages showed as plain text.
    Five chained copies of the sample hold about 130,000 characters of assistant prose."""
    source = tmp_path / "five.jsonl"
    build_big_file(source, copies=5)
    session = parse_files([source])
    expected = sum(e.kind == Kind.ASSISTANT for e in session.events)
    assert sum(len(e.text) for e in session.events if e.kind == Kind.ASSISTANT) > 100_000
    page, seen = open_page(browser, page_of(tmp_path, session))
    only_kind(page, Kind.ASSISTANT)
    page.evaluate("ArenaViewer.showAll(ArenaViewer.lists()[0])")
    expect(page.locator("#timeline article.k-assistant")).to_have_count(expected)
    assert page.locator("#timeline article.k-assistant > .md").count() == expected
    assert seen["errors"] == []
    page.context.close()


def test_task_prompt_arguments_keep_their_line_breaks(browser, folder_page):
    """Issue 13: a twenty-line Task prompt read as one line of escaped newlines."""
    prompt = next(e for e in parse_files(session_files_for(FOLDER_MAIN)).events if e.children)
    page, _seen = open_page(browser, folder_page, f"#e-{prompt.id}")
    call = page.locator(f"#e-{prompt.id}")
    arguments = call.locator("details.lazy", has_text="arguments")
    expect(arguments).to_have_attribute("open", "")  # a permalink opens its event's details
    shown = arguments.locator("pre").inner_text()
    assert "\\n" not in shown
    line = "1. Read `tilelab/softmax.py` and every test under `tests/` that imports it."
    assert line in shown.splitlines()
    assert '"subagent_type": "kernel-reviewer"' in shown
    page.context.close()


def test_subagent_badge_shows_the_task_results_own_duration_and_tokens(browser, folder_page):
    """Issue 13: the badge showed the agent file's span (89.4 s here), not the Task result's
    figures."""
    page, _seen = open_page(browser, folder_page)
    summary = page.locator("details.subagent > summary").first
    badge = summary.locator(".badge").inner_text()
    assert "349.8 s" in badge and "89.4 s" not in badge
    assert "Task result: totalTokens 57,744" in badge
    summary.click()
    figures = page.locator("details.subagent table.cli-figures").first.inner_text()
    assert "Task result: toolUseResult.totalDurationMs\t349,797" in figures
    page.context.close()


def test_codex_token_badges_sit_on_the_model_output_of_each_call(browser, tmp_path):
    """Issue 13: badges landed on the injected context and on tool results."""
    page, seen = open_page(browser, page_of(tmp_path, parse_files([ROLLOUT])))
    page.evaluate("ArenaViewer.showAll(ArenaViewer.lists()[0])")
    badged = page.locator("#timeline article.ev:has(.badge.tokens)")
    expect(badged).to_have_count(32)
    classes = set(badged.evaluate_all("nodes => nodes.map(n => n.className.split(' ')[1])"))
    assert classes <= {"k-reasoning", "k-assistant", "k-tool_call"}
    assert badged.first.locator(".badge.tokens").inner_text() == "in 14k \u00b7 out 238"
    assert seen["errors"] == []
    page.context.close()


def test_a_packed_page_unpacks_after_load_and_works_as_a_plain_one(browser, tmp_path, monkeypatch):
    from transcripts import render

    monkeypatch.setattr(render, "PACK_ABOVE_CHARS", 1000)
    path = tmp_path / "packed.html"
    path.write_text(render_html(parse_files([EDITS]), context={}), encoding="utf-8")
    page, seen = open_page(browser, path)
    page.wait_for_selector("body[data-ready]", state="attached")
    only_kind(page, Kind.TOOL_CALL)
    page.select_option("#tool-filter", "Edit")
    expect(page.locator("#timeline article.ev")).to_have_count(18)
    page.fill("#search", "metrics")
    page.press("#search", "Enter")
    expect(page.locator("#search-count")).to_have_text(re.compile(r"^1 of "))
    assert seen["errors"] == []
    assert seen["requests"] == [path.as_uri()]
    page.context.close()


AGENT_ALONE = SAMPLES / "claude-agent-beside-handwritten" / "agent-5f0a3c71.jsonl"


def test_an_agent_no_call_spawned_is_drawn_searched_and_linked(browser, tmp_path):
    """A subagent file read on its own: the warm-up agent hangs at the top level, labelled by
    kind, and search and permalinks reach its events (search used to throw a TypeError)."""
    session = parse_files([AGENT_ALONE])
    [holder] = session.events
    [agent] = holder.children
    reply = agent.events[-1]
    page, seen = open_page(browser, page_of(tmp_path, session))
    section = page.locator("#timeline details.subagent")
    expect(section.locator("> summary .sub-title")).to_have_text("warm-up agent")
    assert "2 events" in section.locator("> summary").inner_text()
    page.fill("#search", "plan changes")
    page.press("#search", "Enter")
    expect(page.locator(f"#e-{reply.id}")).to_be_visible()
    assert seen["errors"] == []
    page.context.close()

    page, seen = open_page(browser, page_of(tmp_path, session), f"#e-{agent.events[0].id}")
    expect(page.locator(f"#e-{agent.events[0].id}")).to_be_visible()
    assert seen["errors"] == []
    page.context.close()


def test_a_compaction_agent_is_labelled_as_one(browser, tmp_path):
    agent_file = tmp_path / "agent-acompact-7f3e2a.jsonl"
    agent_file.write_text(AGENT_ALONE.read_text().replace("5f0a3c71", "acompact-7f3e2a"))
    page, seen = open_page(browser, page_of(tmp_path, parse_files([agent_file])))
    expect(page.locator("#timeline details.subagent > summary .sub-title")).to_have_text(
        "compaction agent"
    )
    assert seen["errors"] == []
    page.context.close()


def test_a_packed_page_draws_its_first_events_before_unpacking_the_rest(
    browser, tmp_path, monkeypatch
):
    """The head block is drawn on its own: with the packed data broken, the first events are
    there and the note says the rest could not be unpacked; intact, the whole timeline follows."""
    from transcripts import render

    monkeypatch.setattr(render, "PACK_ABOVE_CHARS", 1000)
    monkeypatch.setattr(render, "HEAD_CHARS", 2000)
    session = parse_files([EDITS])
    html = render_html(session, context={})
    head = render.embedded_payload(
        html.replace('id="run-data-gz"', 'id="x"').replace('id="run-data-head"', 'id="run-data"')
    )
    first = head["sessions"][0]["ev"]
    assert 0 < len(first) < len(session.events) == head["of"]

    path = tmp_path / "broken.html"
    start = html.index('id="run-data-gz">') + len('id="run-data-gz">')
    path.write_text(html[:start] + "AAAA" + html[start + 4 :], encoding="utf-8")
    page, seen = open_page(browser, path)
    expect(page.locator("#unpacking")).to_contain_text("could not be unpacked")
    expect(page.locator(f"#e-{first[0]['id']}")).to_be_visible()
    assert page.evaluate("performance.getEntriesByName('first-events').length") == 1
    assert seen["errors"] == []
    page.context.close()

    path = tmp_path / "packed.html"
    path.write_text(html, encoding="utf-8")
    page, seen = open_page(browser, path)
    page.wait_for_selector("body[data-ready]", state="attached")
    assert page.locator("#unpacking").count() == 0
    marks = page.evaluate(
        "['first-events', 'timeline-ready'].map(n => performance.getEntriesByName(n)[0].startTime)"
    )
    assert marks[0] <= marks[1]
    page.fill("#search", "metrics")
    page.press("#search", "Enter")
    expect(page.locator("#search-count")).to_have_text(re.compile(r"^1 of "))
    assert seen["errors"] == []
    page.context.close()
