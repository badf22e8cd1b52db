"""The rendered transcript page, kept beside the run until anything it shows changes.

Rendering a large session takes about a second (docs/benchmarks.md, "Transcripts"); a page is
rendered once per combination of the stored session, what the page shows of the run (solution,
headline evaluation, registry names) and the renderer's own code, then read from storage.
"""

import hashlib
import json
from functools import cache
from pathlib import Path

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

import transcripts
from submissions.models import Run
from submissions.transcript_processing import load_session
from transcripts.render import render_html


def page_html(run: Run, context: dict) -> bytes:
    """The page for `run` with `context`, rendered now or earlier."""
    name = f"{_folder(run)}/{_fingerprint(run, context)}.html"
    if default_storage.exists(name):
        with default_storage.open(name, "rb") as handle:
            return handle.read()
    html = render_html(load_session(run), context=context).encode()
    forget_pages(run)
    default_storage.save(name, ContentFile(html))
    return html


def forget_pages(run: Run) -> None:
    """Drop every rendered page of `run` (its stored session is about to change)."""
    folder = _folder(run)
    if not default_storage.exists(folder):
        return
    for filename in default_storage.listdir(folder)[1]:
        default_storage.delete(f"{folder}/{filename}")


def _folder(run: Run) -> str:
    return f"runs/{run.uuid}/pages"


def _fingerprint(run: Run, context: dict) -> str:
    identity = {
        "session": run.normalized_transcript.name,
        "session_size": run.normalized_transcript.size,
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
