"""The rendered transcript page, kept beside the run until anything it shows changes.

Rendering a large session takes about a second (docs/benchmarks.md, "Transcripts"); a page is
rendered once per combination of the stored session's bytes, what the page shows of the run
(solution, headline evaluation, registry names) and the renderer's own code, then read back.

Pages are stored as ``runs/<uuid>/pages/<fingerprint>-<length>.html``: a reader takes a page
only when its size matches the length in its name, so a write cut short (a killed worker, a
full disk) or still under way is never served; it is rendered again instead.
"""

import hashlib
import json
from functools import cache
from pathlib import Path

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

import transcripts
from submissions.models import Run
from submissions.transcript_processing import session_from_stored, stored_session
from transcripts.render import render_html


def page_html(run: Run, context: dict) -> bytes:
    """The page for `run` with `context`, rendered now or earlier."""
    stored = stored_session(run)
    fingerprint = _fingerprint(stored, context)
    page = _complete_page(run, fingerprint)
    if page is not None:
        return page
    html = render_html(session_from_stored(stored), context=context).encode()
    forget_pages(run)  # older pages, and this one's remains if a write was cut short
    default_storage.save(f"{_folder(run)}/{fingerprint}-{len(html)}.html", ContentFile(html))
    return html


def forget_pages(run: Run) -> None:
    """Drop the rendered pages of `run` (a reader racing with this renders for itself)."""
    for name in _page_names(run):
        default_storage.delete(f"{_folder(run)}/{name}")  # a missing file is no error


def _complete_page(run: Run, fingerprint: str) -> bytes | None:
    for name in _page_names(run):
        stem = name.removesuffix(".html")
        if not stem.startswith(f"{fingerprint}-"):
            continue
        length = stem.removeprefix(f"{fingerprint}-").split("_")[0]  # storage may add _suffix
        try:
            with default_storage.open(f"{_folder(run)}/{name}", "rb") as handle:
                page = handle.read()
        except FileNotFoundError:  # another request dropped it just now
            continue
        if length.isdigit() and len(page) == int(length):
            return page
    return None


def _page_names(run: Run) -> list[str]:
    try:
        return default_storage.listdir(_folder(run))[1]
    except FileNotFoundError:
        return []


def _folder(run: Run) -> str:
    return f"runs/{run.uuid}/pages"


def _fingerprint(stored: bytes, context: dict) -> str:
    identity = {
        "session": hashlib.sha256(stored).hexdigest(),
        "context": context,
        "renderer": _renderer_digest(),
    }
    encoded = json.dumps(identity, sort_keys=True, default=str).encode()
    return hashlib.sha256(encoded).hexdigest()[:32]


@cache
def _renderer_digest() -> str:
    """A digest of the transcripts package's code and assets: a deploy re-renders every page."""
    root = Path(transcripts.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in {".py", ".js", ".css", ".html"}:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
