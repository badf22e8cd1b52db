"""One self-contained HTML page per run: header, totals, evaluation, solution and a lazy timeline.

The page carries its data as one JSON block (gzipped past ``PACK_ABOVE_CHARS``) and draws the
timeline in the browser as the reader scrolls, expands or searches, formatting prose as markdown
as it goes, so a 200 MB log renders in seconds with nothing cut away. A
Content-Security-Policy with hashes of the one inline script and style keeps untrusted content
inert even if an escaping bug slipped through.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from functools import cache
from html import escape
from pathlib import Path

from transcripts.model import Session
from transcripts.payload import build_payload, dump_payload
from transcripts.render_parts import (
    evaluation_html,
    header_html,
    pygments_css,
    solution_html,
    totals_html,
)

ASSETS = Path(__file__).parent / "assets"


def render_html(session: Session, *, context: dict) -> str:
    payload = build_payload(session)
    css, js = _assets()
    title = str(
        context.get("title")
        or context.get("problem")
        or session.title
        or f"Transcript {session.id}"
    )
    body = _body(session, context=context, title=title, totals=payload["sessions"][0]["tot"])
    text = dump_payload(payload)
    head = head_payload(payload) if packs(text) else None
    del payload
    data = data_block(text, head=head)
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head>',
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{csp(css, js)}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_encodable(escape(title))}</title>",
            '<link rel="icon" href="data:,">',
            f"<style>{css}</style></head><body>",
            body,
            data,
            f"<script>{js}</script></body></html>\n",
        ]
    )


# Past this much JSON a page embeds it gzipped (level 1: about 0.6 s for 70 MB, a third of
# the size) and the browser unpacks it after the load event; smaller pages keep plain JSON.
PACK_ABOVE_CHARS = 8_000_000
# A packed page also carries its first events as plain JSON, up to about this much, which the
# browser draws at once while the rest unpacks (a 200 MB session drew nothing for 2 s).
HEAD_CHARS = 300_000
_PLAIN = '<script type="application/json" id="run-data">'
_PACKED = '<script type="application/octet-stream" id="run-data-gz">'
_HEAD = '<script type="application/json" id="run-data-head">'


def packs(data: str) -> bool:
    """Whether a page embeds the payload JSON ``data`` gzipped."""
    return len(data) > PACK_ABOVE_CHARS


def data_block(data: str, *, head: dict | None = None) -> str:
    """The page's data element for the payload JSON ``data`` (ASCII, safe inside a script);
    a packed one is preceded by ``head`` where given (``head_payload``)."""
    if not packs(data):
        return f"{_PLAIN}{data}</script>"
    packed = gzip.compress(data.encode("ascii"), compresslevel=1, mtime=0)
    first = f"{_HEAD}{dump_payload(head)}</script>" if head else ""
    return f"{first}{_PACKED}{base64.b64encode(packed).decode('ascii')}</script>"


def head_payload(payload: dict) -> dict:
    """The main session's first events, up to about HEAD_CHARS of JSON, without their
    subagents (drawn once the whole payload is unpacked): what the page shows first."""
    main = payload["sessions"][0]
    events, size = [], 0
    for event in main["ev"]:
        if events and size > HEAD_CHARS:
            break
        shown = {key: value for key, value in event.items() if key != "ch"}
        size += len(json.dumps(shown, separators=(",", ":")))
        events.append(shown)
    return {"sessions": [{**main, "ev": events}], "of": len(main["ev"]), "args": payload["args"]}


def embedded_payload(html: str) -> dict:
    """The data a page carries, plain or packed, as ``build_payload`` made it."""
    for opening in (_PLAIN, _PACKED):
        start = html.find(opening)
        if start < 0:
            continue
        start += len(opening)
        text = html[start : html.index("</script>", start)]
        if opening == _PACKED:
            text = gzip.decompress(base64.b64decode(text)).decode("ascii")
        return json.loads(text)
    raise ValueError("no transcript data in the page")


def _body(session: Session, *, context: dict, title: str, totals: dict) -> str:
    parts = [
        header_html(session, context=context, title=title),
        totals_html(session, totals),
        evaluation_html(context.get("evaluation")),
        solution_html(context.get("solution")),
        _VIEWER_SKELETON,
    ]
    return _encodable("".join(parts))


def content_security_policy() -> str:
    """The page's own policy. A server adding a CSP header must send this one (plus, say,
    ``frame-ancestors``): browsers enforce every policy, so a stricter header breaks the viewer."""
    return csp(*_assets())


def csp(css: str, js: str) -> str:
    return (
        "default-src 'none'; "
        f"script-src '{sha256_source(js)}'; "
        f"style-src '{sha256_source(css)}'; "
        "img-src data:; font-src 'none'; connect-src 'none'; media-src 'none'; "
        "object-src 'none'; frame-src 'none'; worker-src 'none'; manifest-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


def sha256_source(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def _encodable(text: str) -> str:
    """Lone surrogates (a JS CLI cut an emoji in half) would make the page unwritable as UTF-8."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


@cache
def _assets() -> tuple[str, str]:
    css = (ASSETS / "viewer.css").read_text(encoding="utf-8") + pygments_css()
    js = "\n".join(
        (ASSETS / name).read_text(encoding="utf-8")
        for name in (
            "viewer-md.js",
            "viewer-diff.js",
            "viewer.js",
            "viewer-nav.js",
            "viewer-boot.js",
        )
    )
    if "</" in js or "</" in css:
        raise ValueError("viewer assets must not contain '</'")
    return css, js


_VIEWER_SKELETON = """
<section id="usage-chart-section"><h2>Tokens per API call</h2><div id="usage-chart"></div></section>
<section id="transcript"><h2>Transcript</h2>
<div id="toolbar">
<input id="search" type="search" placeholder="Search the whole transcript" autocomplete="off">
<button id="search-prev" type="button">&#8593;</button>
<button id="search-next" type="button">&#8595;</button>
<span id="search-count"></span>
<span id="kind-filters"></span>
<label>tool <select id="tool-filter"><option value="">all tools</option></select></label>
<button id="expand-all" type="button">expand all</button>
<button id="collapse-all" type="button">collapse all</button>
</div>
<ol id="search-results" hidden></ol>
<div id="timeline"></div>
<noscript><p>The timeline needs JavaScript; the data is in the run-data block.</p></noscript>
</section>
"""
