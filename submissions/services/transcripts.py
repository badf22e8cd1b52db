"""The transcript store: a run's normalized transcript and its rendered page.

Parsing happens on the CPU queue, never in the request. The normalized ``Session`` is stored
(secrets redacted) as gzip JSON beside the run, so pages re-render without a re-parse.

Rendering a large session takes about a second (docs/benchmarks.md, "Transcripts"); a page is
rendered once per combination of the stored session's bytes, what the page shows of the run
(solution, headline evaluation, registry names) and the renderer's own code, then read back.
Pages are stored as ``runs/<uuid>/pages/<fingerprint>-<length>.html``: a reader takes a page
only when its size matches the length in its name, so a write cut short (a killed worker, a
full disk) or still under way is never served; it is rendered again instead.
"""

import gzip
import hashlib
import json
import logging
import tempfile
from functools import cache
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db.models import F, Q
from django.utils import timezone

import transcripts
from submissions.models import Run
from submissions.services import figures, integrity, lineage, queue
from transcripts.model import Session
from transcripts.parsers import TranscriptError, parse_files
from transcripts.redact import redact_session
from transcripts.render import render_html

logger = logging.getLogger(__name__)


def enqueue_transcript_processing(run: Run) -> None:
    # robust: a broker that is down must not fail an upload already stored; the sweeper resends
    queue.enqueue_on_commit(queue.PROCESS_TRANSCRIPT, run_id=run.pk, robust=True)


def resend_stalled(*, before) -> int:
    """Send again the parsing of transcripts pending since before `before` and not sent again
    since then (the message was lost: a broker restart, a killed worker), so that each run has
    one message in flight at most; a run sent ARENA_EVAL_MAX_ATTEMPTS times already is marked
    failed instead (a transcript whose parsing kills its worker must not be parsed for ever).
    Parsing again replaces what a parse stored. Returns how many were sent."""
    pending = Run.objects.filter(
        transcript_status=Run.TranscriptStatus.PENDING, created_at__lt=before
    )
    stalled = pending.filter(
        Q(transcript_resent_at__isnull=True) | Q(transcript_resent_at__lt=before)
    )
    sent = 0
    for run in stalled.only("pk", "transcript_resends"):
        if run.transcript_resends >= settings.ARENA_EVAL_MAX_ATTEMPTS:
            reason = (
                f"the transcript's parsing did not finish in {run.transcript_resends + 1} tries"
            )
            _mark_failed(Run.objects.get(pk=run.pk), reason)
            continue
        Run.objects.filter(pk=run.pk).update(
            transcript_resent_at=timezone.now(), transcript_resends=F("transcript_resends") + 1
        )
        queue.enqueue(queue.PROCESS_TRANSCRIPT, run_id=run.pk)
        sent += 1
    return sent


def process_transcript(*, run: Run) -> None:
    """Parse the run's uploaded transcript files and store the normalized form.

    A transcript no parser understands marks the run's transcript failed with the reason; the
    run itself is untouched.
    """
    try:
        session = redact_session(_parse_run_files(run))
        payload = _stored_form(session)
    except TranscriptError as error:
        _mark_failed(run, str(error))
        return
    except Exception as error:  # a parser bug must not leave the run pending for ever
        logger.exception("transcript of %s failed to parse", run)
        _mark_failed(run, f"the transcript could not be read ({type(error).__name__})")
        return
    figures.refresh_figures(run=run, session=session)
    integrity.refresh_transcript_flags(run=run, session=session)
    if run.normalized_transcript:
        forget_pages(run)
        run.normalized_transcript.delete(save=False)
    run.normalized_transcript.save("normalized.json.gz", ContentFile(payload), save=False)
    run.transcript_status = Run.TranscriptStatus.PARSED
    run.transcript_error = ""
    run.save(update_fields=["normalized_transcript", "transcript_status", "transcript_error"])
    lineage.record_lineage(run=run, session=session)


def _stored_form(session: Session) -> bytes:
    return gzip.compress(json.dumps(session.to_dict()).encode(), 6)


def load_session(run: Run) -> Session:
    return session_from_stored(stored_session(run))


def stored_session(run: Run) -> bytes:
    """The stored form as it is on disk (gzip JSON)."""
    with run.normalized_transcript.open("rb") as handle:
        return handle.read()


def session_from_stored(stored: bytes) -> Session:
    return Session.from_dict(json.loads(gzip.decompress(stored)))


def _parse_run_files(run: Run) -> Session:
    files = list(run.transcript_files.all())
    if not files:
        raise TranscriptError("the run has no transcript files")
    with tempfile.TemporaryDirectory(prefix="arena-transcript-") as folder:
        paths = [_copy_out(stored, Path(folder)) for stored in files]
        return parse_files(paths)


def _copy_out(stored, folder: Path) -> Path:
    # Names were checked at intake; the parts are re-checked so nothing lands outside ``folder``.
    parts = [p for p in PurePosixPath(stored.name).parts if p not in ("", ".", "..", "/")]
    target = folder.joinpath(*parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    with stored.file.open("rb") as source, target.open("wb") as sink:
        for chunk in iter(lambda: source.read(1 << 20), b""):
            sink.write(chunk)
    return target


def _mark_failed(run: Run, reason: str) -> None:
    figures.refresh_figures(run=run, session=None)  # a cost from prices still applies
    integrity.refresh_transcript_flags(run=run, session=None)
    run.transcript_status = Run.TranscriptStatus.FAILED
    run.transcript_error = reason
    run.save(update_fields=["transcript_status", "transcript_error"])


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
