"""Writes and reads of a run's normalized transcript.

Parsing happens on the CPU queue, never in the request. The normalized ``Session`` is stored
(secrets redacted) as gzip JSON beside the run, so pages re-render without a re-parse.
"""

import gzip
import json
import logging
import tempfile
from pathlib import Path, PurePosixPath

from django.core.files.base import ContentFile
from django.db import transaction

from submissions.models import Run
from transcripts.model import Session
from transcripts.parsers import TranscriptError, parse_files
from transcripts.redact import redact_session

logger = logging.getLogger(__name__)


def enqueue_transcript_processing(run: Run) -> None:
    from submissions.tasks import process_transcript

    run_id = run.pk
    transaction.on_commit(lambda: process_transcript.delay(run_id=run_id))


def process_transcript(*, run: Run) -> None:
    """Parse the run's uploaded transcript files and store the normalized form.

    A transcript no parser understands marks the run's transcript failed with the reason; the
    run itself is untouched.
    """
    try:
        payload = _stored_form(_parse_run_files(run))
    except TranscriptError as error:
        _mark_failed(run, str(error))
        return
    except Exception as error:  # a parser bug must not leave the run pending for ever
        logger.exception("transcript of %s failed to parse", run)
        _mark_failed(run, f"the transcript could not be read ({type(error).__name__})")
        return
    if run.normalized_transcript:
        from submissions.transcript_pages import forget_pages

        forget_pages(run)
        run.normalized_transcript.delete(save=False)
    run.normalized_transcript.save("normalized.json.gz", ContentFile(payload), save=False)
    run.transcript_status = Run.TranscriptStatus.PARSED
    run.transcript_error = ""
    run.save(update_fields=["normalized_transcript", "transcript_status", "transcript_error"])


def _stored_form(session: Session) -> bytes:
    """Secrets redacted, then gzip JSON."""
    return gzip.compress(json.dumps(redact_session(session).to_dict()).encode(), 6)


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
    run.transcript_status = Run.TranscriptStatus.FAILED
    run.transcript_error = reason
    run.save(update_fields=["transcript_status", "transcript_error"])
