"""Screenshots of each page type, taken with Debian's Chromium through Playwright.

Against a dev server filled with the synthetic history::

    python manage.py demo_history && python manage.py runserver 127.0.0.1:8000
    python docs/screenshots/capture.py http://127.0.0.1:8000 [NAME=PATH ...]

It writes one PNG per page type beside this file; the run page is found by following the best
run of a kernel-to-kernel problem (softmax: its starter comparison shows), as a visitor would.
NAME=PATH pairs add pages (say, a run graded twice, for its history).
"""

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
PAGES = [
    ("board", "/"),
    (
        "board-sorted-filtered",
        "/boards/h100-sxm/?sort=speedup_eager&provider=Anthropic&provider=OpenAI",
    ),
    ("matrix", "/boards/h100-sxm/matrix/"),
    ("charts", "/boards/h100-sxm/charts/"),
    ("problem-index", "/problems/"),
    ("problem", "/problems/fp8_gemm/"),  # a library line in its roofline
    ("problem-cpu", "/problems/softmax/?hardware=cpu"),
    ("model-index", "/models/"),
    ("model", "/models/claude-sonnet-4-5/"),
    ("harness", "/harnesses/codex-cli/"),
    ("runs", "/runs/"),
]


def capture(base: str, extra: list[tuple[str, str]]) -> list[Path]:
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        for name, path in PAGES + extra:
            written.append(_shot(page, base + path, name))
        page.goto(base + "/problems/softmax/")
        page.locator("td.num a[href*='/runs/']").first.click()
        page.wait_for_url("**/runs/*/")
        written.append(_shot(page, page.url, "run"))
        browser.close()
    return written


def _shot(page, url: str, name: str) -> Path:
    page.goto(url, wait_until="load")
    charts = page.locator(".chart").count()
    if charts:
        page.wait_for_function(
            "n => document.querySelectorAll('.chart.drawn').length === n", arg=charts
        )
    path = HERE / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


if __name__ == "__main__":
    base = sys.argv[1].rstrip("/") if len(sys.argv) > 1 else "http://127.0.0.1:8000"
    for written in capture(base, [tuple(pair.split("=", 1)) for pair in sys.argv[2:]]):
        print(written)
