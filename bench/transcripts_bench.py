"""Parse + render 51 MB and 200 MB Claude Code sessions and open the pages in headless Chromium.

    .venv/bin/python bench/transcripts_bench.py [--copies 37 145] [--runs 3] [--keep DIR]
        [--others-bin VENV/bin] [--kbh KERNELBENCH_HARD_CHECKOUT]

The big file is copies of the real sample with uuids, message ids, request ids and tool ids
rewritten per copy, each copy chained to the previous one so the result is one long session.
Parse and render run in a fresh child process so that its peak RSS (``ru_maxrss``) is theirs alone.
The generated files go to a temporary folder that is removed at the end (unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests/transcripts/samples/claude-jsonl-edits-3fe1b6bc.jsonl"
CHROMIUM = "/usr/bin/chromium"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_IDS = re.compile(r"\b(msg_|toolu_|req_)([A-Za-z0-9_]+)")


def build_big_file(target: Path, copies: int) -> None:
    text = SAMPLE.read_text(encoding="utf-8")
    session_id = json.loads(text.splitlines()[1])["sessionId"]
    last_uuid = None
    with open(target, "w", encoding="utf-8") as out:
        for copy in range(copies):
            body = _rewrite(text, copy, session_id)
            if last_uuid is not None:
                body = body.replace('"parentUuid":null', f'"parentUuid":"{last_uuid}"')
            out.write(body)
            last_uuid = _last_uuid(body)


def _rewrite(text: str, copy: int, session_id: str) -> str:
    if copy == 0:
        return text

    def uuid(match: re.Match) -> str:
        value = match.group(0)
        return value if value == session_id else f"{value[:-6]}{copy:06x}"

    text = _UUID.sub(uuid, text)
    return _IDS.sub(lambda m: f"{m.group(1)}{m.group(2)}c{copy}", text)


def _last_uuid(body: str) -> str | None:
    for line in reversed(body.splitlines()):
        record = json.loads(line)
        if record.get("uuid"):
            return record["uuid"]
    return None


def measure_in_child(source: Path, page: Path) -> dict:
    code = (
        "import json,sys;from bench.transcripts_bench import parse_and_render as f;"
        "print(json.dumps(f(sys.argv[1],sys.argv[2])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(source), str(page)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def parse_and_render(source: str, page: str) -> dict:
    """What the platform does with an upload's transcript: parse, redact secrets, render."""
    from transcripts.parsers import parse_files
    from transcripts.redact import redact_session
    from transcripts.render import render_html

    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start, cpu_start = time.perf_counter(), time.process_time()
    session = parse_files([Path(source)])
    parsed, cpu_parsed = time.perf_counter(), time.process_time()
    session = redact_session(session)
    redacted, cpu_redacted = time.perf_counter(), time.process_time()
    html = render_html(session, context={"title": "bench", "problem": "bench"})
    rendered, cpu_rendered = time.perf_counter(), time.process_time()
    Path(page).write_text(html, encoding="utf-8")
    figures = {
        "parse_s": parsed - start,
        "redact_s": redacted - parsed,
        "render_s": rendered - redacted,
        "total_s": rendered - start,
        "parse_cpu_s": cpu_parsed - cpu_start,
        "redact_cpu_s": cpu_redacted - cpu_parsed,
        "render_cpu_s": cpu_rendered - cpu_redacted,
        "html_bytes": len(html.encode("utf-8")),
        "baseline_rss_mb": baseline_kb / 1024,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    figures["events"], figures["events_missing_content"] = _content_check(session, html)
    return figures


def _content_check(session, html: str) -> tuple[int, int]:
    """Events in the page whose text, diff or arguments differ from the parsed session."""
    from transcripts.render import embedded_payload

    shown = embedded_payload(html)["sessions"]
    page_events = [event for entry in shown for event in entry["ev"]]
    events = [event for _depth, sub in session.walk() for event in sub.events]
    missing = sum(
        (p.get("x", ""), p.get("df"), p.get("a")) != (e.text, e.diff, e.arguments)
        for p, e in zip(page_events, events, strict=True)
    )
    return len(events), missing


LOAD_TIMEOUT_MS = 120_000


def browser_load(page: Path, *, ours: bool = True) -> dict:
    """Load-event time in headless Chromium; requests other than the page's own files fail."""
    from playwright.sync_api import TimeoutError as PageTimeout
    from playwright.sync_api import sync_playwright

    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        tab = browser.new_page()
        requests: list[str] = []
        tab.on("request", lambda r: requests.append(r.url))
        tab.route(
            "**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort()
        )
        start = time.perf_counter()
        try:
            tab.goto(page.as_uri(), wait_until="load", timeout=LOAD_TIMEOUT_MS)
        except PageTimeout:
            if ours:
                raise
            browser.close()  # another viewer's page that never loads is a figure, not a crash
            return {"load_event_ms": f"none within {LOAD_TIMEOUT_MS / 1e3:.0f} s"}
        wall = time.perf_counter() - start
        if ours:
            tab.wait_for_selector("body[data-ready]", state="attached", timeout=LOAD_TIMEOUT_MS)
        timing = tab.evaluate(_TIMING_JS)
        figures = {
            "load_event_ms": timing["load"],
            "dom_content_loaded_ms": timing["dom"],
            "goto_wall_s": wall,
            "requests_other_than_the_page": [url for url in requests if url != page.as_uri()],
        }
        if ours:
            figures["first_events_ms"] = timing["first"]
            figures["timeline_ready_ms"] = timing["ready"]
            figures["events_in_dom_at_ready"] = timing["events"]
            figures["full_search_ms"] = tab.evaluate(_SEARCH_JS)
        browser.close()
    return figures


_TIMING_JS = """(() => { const t = performance.getEntriesByType('navigation')[0];
  const ready = performance.getEntriesByName('timeline-ready')[0];
  const first = performance.getEntriesByName('first-events')[0];
  return {load: t.loadEventStart, dom: t.domContentLoadedEventEnd,
          ready: ready ? ready.startTime : null, first: first ? first.startTime : null,
          events: document.querySelectorAll('article.ev').length}; })()"""
_SEARCH_JS = """(() => { const i = document.getElementById('search'); const t = performance.now();
  i.value = 'no-such-text-anywhere';
  i.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'}));
  return performance.now() - t; })()"""


def compare_other_viewers(source: Path, folder: Path, *, bin_dir: Path | None, kbh: Path | None):
    """Run other viewers on the same file: wall time, peak RSS, output size, Chromium load."""
    runs = []
    if bin_dir is not None:
        ccl, cct = folder / "claude-code-log.html", folder / "claude-code-transcripts"
        runs.append(
            (
                "claude-code-log",
                [bin_dir / "claude-code-log", "convert", source, "-o", ccl, "--no-cache"],
                None,
                ccl,
                ccl,
            )
        )
        runs.append(
            (
                "claude-code-transcripts",
                [bin_dir / "claude-code-transcripts", "json", source, "-o", cct],
                None,
                cct,
                cct / "index.html",
            )
        )
    if kbh is not None:
        run_dir, out = folder / "kbh-run", folder / "kernelbench-hard.html"
        run_dir.mkdir(exist_ok=True)
        link = run_dir / "transcript.jsonl"
        link.unlink(missing_ok=True)
        link.symlink_to(source)
        command = ["python3", "-m", "src.viewer", run_dir, "--out", out]
        runs.append(("KernelBench-Hard viewer", command, kbh, out, out))
    for name, command, cwd, output, page in runs:
        print(f"-- {name}")
        wall, rss_mb = _timed_child([str(part) for part in command], cwd)
        report([{"wall_s": wall, "peak_rss_mb": rss_mb, "output_bytes": _size(output)}])
        report([browser_load(page, ours=False)])


def _timed_child(command: list[str], cwd: Path | None) -> tuple[float, float]:
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise RuntimeError(f"{command[0]} failed: {child.stderr.read().decode()[-2000:]}")
    return time.perf_counter() - start, usage.ru_maxrss / 1024


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, nargs="+", default=[37, 145])
    parser.add_argument("--runs", type=int, default=3, help="repeats; medians are printed")
    parser.add_argument("--keep", type=Path, help="keep the big files and the pages in this folder")
    parser.add_argument(
        "--others-bin", type=Path, help="bin folder with claude-code-log and -transcripts"
    )
    parser.add_argument("--kbh", type=Path, help="a KernelBench-Hard checkout (for its src/viewer)")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="transcripts-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for copies in args.copies:
            source = bench_size(folder, copies, args.runs)
        compare_other_viewers(source, folder, bin_dir=args.others_bin, kbh=args.kbh)
    finally:
        if args.keep is None:
            shutil.rmtree(folder)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def bench_size(folder: Path, copies: int, runs: int) -> Path:
    source, page = folder / f"big-{copies}.jsonl", folder / f"big-{copies}.html"
    build_big_file(source, copies)
    print(f"== input: {source.stat().st_size / 1e6:.1f} MB, {copies} copies of {SAMPLE.name}")
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    report([measure_in_child(source, page) for _ in range(runs)])
    report([browser_load(page) for _ in range(runs)])
    return source


def report(runs: list[dict]) -> None:
    """Median of each figure, with the range when runs differ."""
    for key, first in runs[0].items():
        values = [run[key] for run in runs]
        if not isinstance(first, int | float):
            print(f"{key:26} {first}")
            continue
        middle = statistics.median(values)
        spread = f"  (min {min(values):.3f}, max {max(values):.3f})" if len(set(values)) > 1 else ""
        print(
            f"{key:26} {middle:.3f}{spread}" if isinstance(middle, float) else f"{key:26} {middle}"
        )


if __name__ == "__main__":
    main()
