"""The transcript page as the platform serves it, header policy included, in headless Chromium."""

import os
from pathlib import Path

import pytest
from django.urls import reverse

from tests.submissions.test_transcript_pages import parsed_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def test_served_transcript_renders_its_events_under_the_header_policy(live_server, monkeypatch):
    if os.environ.get("ARENA_SKIP_BROWSER") == "1":
        pytest.skip("ARENA_SKIP_BROWSER=1")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (or ARENA_SKIP_BROWSER=1)")
    run = parsed_run()
    url = live_server.url + reverse("submissions:run-transcript", kwargs={"run_id": run.uuid})
    # Playwright's sync API keeps an event loop on this thread; the ORM work is done by now.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    violations, foreign = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        page.on(
            "console",
            lambda msg: "Content Security Policy" in msg.text and violations.append(msg.text),
        )
        page.on(
            "request", lambda r: not r.url.startswith(live_server.url) and foreign.append(r.url)
        )
        page.goto(url, wait_until="load")
        page.wait_for_selector("[id^='e-']")
        events = page.locator("[id^='e-']").count()
        browser.close()
    assert events > 0
    assert violations == []
    assert foreign == []
