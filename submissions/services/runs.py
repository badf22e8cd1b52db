"""Writes: accepting uploaded runs."""

import contextlib
import hashlib
import json
import logging
from collections.abc import Iterator

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction

from runners.contract import content_sha256
from submissions.archives import open_bundle
from submissions.models import (
    HardwareTarget,
    Harness,
    LanguageModel,
    Problem,
    Run,
    Solution,
    TranscriptFile,
)
from submissions.models.runs import Sidecar, folder_ast_hash, sidecar_path
from submissions.services import integrity, queue, quotas
from submissions.services.evaluations import enqueue_evaluation
from submissions.services.transcripts import enqueue_transcript_processing
from submissions.uploads import (
    IncomingFile,
    RunFiles,
    UploadConflict,
    check_run_files,
    metadata_columns,
    parse_metadata,
    read_all,
    safe_relative_name,
    sha256_of,
    sidecar_contents,
)

logger = logging.getLogger(__name__)


def create_run(
    *,
    submitter,
    problem: Problem,
    language_model: LanguageModel,
    harness: Harness,
    hardware: HardwareTarget,
    files: RunFiles,
    effort: str = "",
    transcript_required: bool = True,
) -> tuple[Run, bool]:
    """Stores an uploaded run; returns ``(run, created)``.

    An upload identical to an earlier one by the same submitter (same files, problem, model,
    harness and hardware) returns the earlier run; another submitter's identical upload is a run
    of its own (a private run of someone else is never handed out, and nothing is lost). A
    missing or unparseable solution is accepted: grading reports it. ``transcript_required``
    off admits a run without transcript (services.imports: a source that publishes none).
    On any failure nothing is left behind, neither rows nor files. The first evaluation is
    queued on the run's hardware once the transaction commits.
    """
    check_run_files(files, transcript_required=transcript_required)
    digests = _Digests.of(files)
    key = content_key(
        digests,
        submitter=submitter,
        problem=problem,
        model=language_model,
        harness=harness,
        hardware=hardware,
    )
    if existing := Run.objects.filter(content_key=key).first():
        return _same_upload(existing, effort=effort, metadata=files.metadata), False
    quotas.check_queued_evaluations(submitter=submitter)
    fields = dict(
        submitter=submitter,
        problem=problem,
        problem_version=problem.version,
        language_model=language_model,
        harness=harness,
        hardware=hardware,
        effort=effort,
        content_key=key,
        metadata=files.metadata,
        **metadata_columns(files.metadata),
    )
    try:
        return _store_run(fields, files, digests), True
    except IntegrityError:
        # A concurrent upload of the same run (or solution) won the race.
        if existing := Run.objects.filter(content_key=key).first():
            return _same_upload(existing, effort=effort, metadata=files.metadata), False
        return _store_run(fields, files, digests), True


def create_run_without_code(
    *,
    submitter,
    problem: Problem,
    language_model: LanguageModel,
    harness: Harness,
    hardware: HardwareTarget,
    effort: str,
    metadata: dict,
    solution_sha256: str,
    source_url: str,
    source_result: dict,
) -> tuple[Run, bool]:
    """A run whose code stays where its source publishes it (services.imports.load_graded):
    nothing stored but the row, nothing queued. Its content key is the one an upload of the same
    solution by the same account gets, so importing the files later finds this run."""
    digests = _Digests(solution_sha256, [])
    key = content_key(
        digests,
        submitter=submitter,
        problem=problem,
        model=language_model,
        harness=harness,
        hardware=hardware,
    )
    if existing := Run.objects.filter(content_key=key).first():
        return existing, False
    run = Run.objects.create(
        submitter=submitter,
        problem=problem,
        problem_version=problem.version,
        language_model=language_model,
        harness=harness,
        hardware=hardware,
        effort=effort,
        content_key=key,
        transcript_status=Run.TranscriptStatus.NONE,
        metadata=metadata,
        source_url=source_url,
        source_result=source_result,
        **metadata_columns(metadata),
    )
    return run, True


def _same_upload(existing: Run, *, effort: str, metadata: dict) -> Run:
    """The earlier run, when the new upload says nothing else of it (a retried upload); an
    UploadConflict naming it when the same files come with another effort or metadata, which
    keeping the earlier run would drop."""
    changed = [
        name
        for name, before, now in (
            ("effort", existing.effort, effort),
            ("metadata", existing.metadata, metadata),
        )
        if before != now
    ]
    if changed:
        raise UploadConflict(
            f"These files are already your run {existing.uuid}, uploaded with another "
            f"{' and '.join(changed)}; nothing was stored or changed (a run's labels are fixed "
            "when it is uploaded).",
            existing,
        )
    return existing


class _Digests:
    def __init__(self, solution: str, transcripts: list[tuple[str, str]]) -> None:
        self.solution = solution
        self.transcripts = transcripts  # (normalized name, sha256) in upload order

    @classmethod
    def of(cls, files: RunFiles) -> "_Digests":
        solution = ""
        if files.solution:
            solution = content_sha256(read_all(files.solution.file), sidecar_contents(files))
        names = [safe_relative_name(t.name) for t in files.transcripts]
        return cls(
            solution,
            [(n, sha256_of(t.file)) for n, t in zip(names, files.transcripts, strict=True)],
        )


def content_key(digests: _Digests, *, submitter, problem, model, harness, hardware) -> str:
    # migrations/0003_content_key_per_submitter.py computes the same key for stored runs.
    identity = {
        "submitter": submitter.pk if submitter is not None else None,
        "solution": digests.solution,
        "transcripts": sorted(digests.transcripts),
        "problem": problem.slug,
        "model": model.slug,
        "harness": harness.slug,
        "hardware": hardware.slug,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _store_run(fields: dict, files: RunFiles, digests: _Digests) -> Run:
    with _removed_on_error() as written, transaction.atomic():
        solution = None
        if files.solution is not None:
            solution = _store_solution(files, digests.solution, written)
        run = Run.objects.create(
            solution=solution, transcript_status=_transcript_status(files.transcripts), **fields
        )
        for upload, (name, sha256) in zip(files.transcripts, digests.transcripts, strict=True):
            _store_transcript(run, upload, name=name, sha256=sha256, written=written)
    integrity.refresh_solution_flags(run=run)
    logger.info("run %s received (%s transcript files)", run.uuid, len(files.transcripts))
    # Grading starts once the run is committed.
    # robust: a failure to grade must neither fail the upload nor pass for create_run's race.
    transaction.on_commit(lambda: enqueue_evaluation(run=run), robust=True)
    if files.transcripts:
        enqueue_transcript_processing(run)
    return run


def _transcript_status(transcripts: list) -> str:
    """Pending until parsed; none for a run admitted without transcript (nothing to parse, and
    nothing for the sweeper to send again)."""
    return Run.TranscriptStatus.PENDING if transcripts else Run.TranscriptStatus.NONE


def _store_solution(files: RunFiles, sha256: str, written: list[str]) -> Solution:
    """The Solution row of solution.py and its sidecars, shared by every run with that content."""
    if existing := Solution.objects.filter(sha256=sha256).first():
        return existing
    upload = files.solution
    sidecars = [
        _store_sidecar(sha256, name, data, written)
        for name, data in sorted(sidecar_contents(files).items())
    ]
    code = read_all(upload.file).decode("utf-8", errors="replace")
    solution = Solution(
        sha256=sha256,
        size=upload.size,
        ast_hash=folder_ast_hash(code, [(s.name, s.sha256) for s in sidecars]),
        sidecars=[s.to_dict() for s in sidecars],
    )
    solution.file.save("solution.py", upload.file, save=False)
    written.append(solution.file.name)
    solution.save()
    return solution


def _store_sidecar(sha256: str, name: str, data: bytes, written: list[str]) -> Sidecar:
    path = default_storage.save(sidecar_path(sha256, name), ContentFile(data))
    written.append(path)
    return Sidecar(name, len(data), hashlib.sha256(data).hexdigest(), path)


def _store_transcript(
    run: Run, upload: IncomingFile, *, name: str, sha256: str, written: list[str]
) -> TranscriptFile:
    transcript = TranscriptFile(run=run, name=name, sha256=sha256, size=upload.size)
    transcript.file.save(name.rsplit("/", 1)[-1], upload.file, save=False)
    written.append(transcript.file.name)
    transcript.save()
    return transcript


@contextlib.contextmanager
def _removed_on_error() -> Iterator[list[str]]:
    """Yields a list to record stored file names in; deletes those files if the block fails."""
    written: list[str] = []
    try:
        yield written
    except BaseException:
        for name in written:
            default_storage.delete(name)
        raise


def set_published(*, runs, published: bool) -> int:
    """Publishes or withdraws runs (a maintainer's review); returns how many changed."""
    changing = runs.exclude(published=published)
    hardware_ids = list(changing.values_list("hardware_id", flat=True).distinct())
    count = changing.update(published=published)
    queue.refresh_boards_on_commit(hardware_ids=hardware_ids)
    return count


def delete_runs(*, runs) -> None:
    """Runs a maintainer deletes, with their evaluations and transcripts (stored solutions stay:
    other runs may share them); the boards they counted on are refreshed."""
    hardware_ids = list(runs.values_list("hardware_id", flat=True).distinct())
    runs.delete()
    queue.refresh_boards_on_commit(hardware_ids=hardware_ids)


def create_run_from_upload(data: dict, *, submitter) -> tuple[Run, bool]:
    """``create_run`` over the upload form's validated fields: loose files or one bundle."""
    with _run_files(data) as files:
        return create_run(
            submitter=submitter,
            problem=data["problem"],
            language_model=data["model"],
            harness=data["harness"],
            hardware=data["hardware"],
            effort=data["effort"],
            files=files,
        )


@contextlib.contextmanager
def _run_files(data: dict) -> Iterator[RunFiles]:
    metadata = parse_metadata(data["metadata"]) if data.get("metadata") else {}
    if data.get("bundle"):
        with open_bundle(data["bundle"]) as files:
            files.metadata |= metadata
            yield files
        return
    uploads = data.get("transcript", [])
    names = data.get("transcript_name") or [upload.name for upload in uploads]
    solution = data.get("solution")
    yield RunFiles(
        solution=IncomingFile(name="solution.py", file=solution) if solution else None,
        transcripts=[IncomingFile(name=n, file=u) for n, u in zip(names, uploads, strict=True)],
        metadata=metadata,
        sidecars=[IncomingFile(name=u.name, file=u) for u in data.get("solution_files", [])],
    )
