"""Screenshots of each page type, taken with Debian's Chromium through Playwright.

Against the demo (`make demo`: the board of real agent runs, and the example runs graded on the
CPU in the background; wait for them, var/demo_runs.log)::

    python docs/screenshots/capture.py http://127.0.0.1:8000 [NAME=PATH ...]

It writes one PNG per page type beside this file at 1440 x 900, and the board, a run and a
transcript again at 390 x 844 (a phone, `-phone`). The run page is found by following the
best-scored run on the H100, the transcript from the first example run on the CPU.
NAME=PATH pairs add pages (say, a run graded twice, for its history).
"""

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LAPTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
PAGES = [
    ("board", "/"),
    ("board-sorted-filtered", "/boards/h100-sxm/?sort=-hidden_score&provider=Anthropic"),
    ("matrix", "/boards/h100-sxm/matrix/"),
    ("charts", "/boards/h100-sxm/charts/"),
    ("problem-index", "/problems/"),
    ("problem", "/problems/kbh_w4a16_gemm/"),
    ("problem-cpu", "/problems/softmax/?hardware=cpu"),
    ("model-index", "/models/"),
    ("model", "/models/claude-opus-4-8/"),
    ("harness", "/harnesses/claude-code/"),
    ("runs", "/runs/"),
    ("submit", "/submit/"),
    ("scoring", "/scoring/"),
]


def capture(base: str, extra: list[tuple[str, str]]) -> list[Path]:
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        laptop = browser.new_page(viewport=LAPTOP)
        for name, path in PAGES + extra:
            written.append(_shot(laptop, base + path, name))
        run = base + _first_run(laptop, base + "/runs/?hardware=h100-sxm&sort=-score")
        transcript = base + _first_run(laptop, base + "/runs/?hardware=cpu") + "transcript/"
        written += [_shot(laptop, run, "run"), _shot(laptop, transcript, "transcript")]
        phone = browser.new_page(viewport=PHONE)
        for name, url in (("board", base + "/"), ("run", run), ("transcript", transcript)):
            written.append(_shot(phone, url, f"{name}-phone"))
        browser.close()
    return written


def _first_run(page, url: str) -> str:
    page.goto(url, wait_until="load")
    link = page.locator("main a[href^='/runs/'][href$='/']:not([href='/runs/'])").first
    return link.get_attribute("href")


def _shot(page, url: str, name: str) -> Path:
    page.goto(url, wait_until="load")
    charts = page.locator("div.chart").count()  # plotly's (the transcript draws its own SVG)
    if charts:
        page.wait_for_function(
            "n => document.querySelectorAll('div.chart.drawn').length === n", arg=charts
        )
    path = HERE / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


if __name__ == "__main__":
    base = sys.argv[1].rstrip("/") if len(sys.argv) > 1 else "http://127.0.0.1:8000"
    for written in capture(base, [tuple(pair.split("=", 1)) for pair in sys.argv[2:]]):
        print(written)
