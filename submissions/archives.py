"""Reading a run folder out of an uploaded .zip or .tar.gz without trusting the archive.

Every member's path and type is checked before anything is read; declared sizes, member count
and compression ratio are bounded before extraction, and bytes are counted again while
extracting, since headers can lie. Only the files a run uses are extracted, into temporary files.
"""

import contextlib
import gzip
import io
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

from django.conf import settings
from django.core.files import File

from arena_cli.runfolder import METADATA_NAMES
from runners.contract import SIDECAR_SUFFIXES
from submissions.uploads import (
    IncomingFile,
    IntakeError,
    RunFiles,
    UploadTooLarge,
    parse_metadata,
    read_all,
    safe_relative_name,
)

CHUNK = 64 * 1024
RATIO_FLOOR = 1024 * 1024  # below this many bytes, any compression ratio is harmless
TRANSCRIPT_SUFFIXES = (".jsonl", ".json")
IGNORED_TOP_DIRS = ("__MACOSX",)
ZIP_END_SIGNATURE = b"PK\x05\x06"
ZIP_END_SEARCH = 22 + 65535  # the end record plus the longest archive comment
ZIP_ENTRY_BOUND = 46 + 1024 + 1024  # fixed header, a generous name and extra fields
TAR_ENTRY_BOUND = 4 * tarfile.BLOCKSIZE  # header, a pax record with a long name, padding
# What the stdlib readers raise on damaged input (ValueError covers undecodable member names).
CORRUPT = (
    tarfile.TarError,
    zipfile.BadZipFile,
    gzip.BadGzipFile,
    zlib.error,
    EOFError,
    NotImplementedError,
    ValueError,
)


@dataclass
class Member:
    name: str
    size: int
    open: Callable[[], IO[bytes]]


@contextlib.contextmanager
def open_bundle(upload: File) -> Iterator[RunFiles]:
    """The run files inside ``upload``; their temporary copies are removed on exit."""
    with contextlib.ExitStack() as stack:
        try:
            files = _run_files(stack.enter_context(_members(upload)), stack)
        except CORRUPT as error:
            raise IntakeError(f"The bundle is corrupt or unsupported: {error}") from None
        yield files


@contextlib.contextmanager
def _members(upload: File) -> Iterator[list[Member]]:
    upload.seek(0)
    magic = upload.read(4)
    upload.seek(0)
    if magic.startswith(b"PK"):
        _check_zip_directory(upload)
        with zipfile.ZipFile(upload) as archive:
            yield _zip_members(archive, compressed=upload.size)
    elif magic.startswith(b"\x1f\x8b"):
        with gzip.GzipFile(fileobj=upload, mode="rb") as inflated:
            stream = _BoundedTar(inflated, compressed=upload.size)
            with tarfile.open(fileobj=stream, mode="r:") as archive:
                yield _tar_members(archive, compressed=upload.size)
    else:
        raise IntakeError("The bundle must be a .zip or .tar.gz archive.")


def _check_zip_directory(upload: File) -> None:
    """Bounds the central directory from the end record, before zipfile loads all of it."""
    upload.seek(max(upload.size - ZIP_END_SEARCH, 0))
    tail = upload.read()
    upload.seek(0)
    at = tail.rfind(ZIP_END_SIGNATURE)
    if at < 0 or len(tail) < at + 16:
        return  # not found: zipfile reports the damage
    entries = int.from_bytes(tail[at + 10 : at + 12], "little")
    directory_size = int.from_bytes(tail[at + 12 : at + 16], "little")
    if entries != 0xFFFF:  # zip64 keeps the real count elsewhere
        _check_count(entries)
    if directory_size > settings.ARENA_MAX_ARCHIVE_MEMBERS * ZIP_ENTRY_BOUND:
        raise IntakeError("The bundle's zip directory is larger than its member limit allows.")


def _zip_members(archive: zipfile.ZipFile, *, compressed: int) -> list[Member]:
    infos = archive.infolist()
    _check_count(len(infos))
    _check_expansion(sum(info.file_size for info in infos), compressed)
    members = []
    for info in infos:
        _check_zip_type(info)
        if not info.is_dir():  # folders are never extracted, so their names do not matter
            name, opener = safe_relative_name(info.filename), _zip_opener(archive, info)
            members.append(Member(name=name, size=info.file_size, open=opener))
    return members


def _zip_opener(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], IO[bytes]]:
    return lambda: archive.open(info)


def _check_zip_type(info: zipfile.ZipInfo) -> None:
    if info.flag_bits & 0x1:
        raise IntakeError(f"Encrypted member {info.filename!r} is not allowed.")
    mode = info.external_attr >> 16
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise IntakeError(f"Member {info.filename!r} is a link or special file; not allowed.")


class _BoundedTar:
    """The tar stream inside the gzip layer, refused once it grows past what the limits allow.

    tarfile reads a pax record or GNU long name whole, before its member reaches any check here,
    so the stream itself is bounded: headers may add TAR_ENTRY_BOUND per allowed member.
    """

    def __init__(self, inflated: gzip.GzipFile, *, compressed: int) -> None:
        self.inflated, self.compressed = inflated, compressed
        self.headers = settings.ARENA_MAX_ARCHIVE_MEMBERS * TAR_ENTRY_BOUND + tarfile.RECORDSIZE

    def read(self, size: int) -> bytes:
        self._check_end(self.inflated.tell() + size)
        return self.inflated.read(size)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            self._check_end(offset)
        return self.inflated.seek(offset, whence)

    def tell(self) -> int:
        return self.inflated.tell()

    def _check_end(self, end: int) -> None:
        _check_expansion(max(end - self.headers, 0), self.compressed)


def _tar_members(archive: tarfile.TarFile, *, compressed: int) -> list[Member]:
    members, declared, seen = [], 0, 0
    while (info := archive.next()) is not None:
        seen += 1
        _check_count(seen)  # folders count too: each one costs a header to parse
        declared += info.size
        _check_expansion(declared, compressed)
        _check_tar_type(info)
        if info.isreg():
            name, opener = safe_relative_name(info.name), _tar_opener(archive, info)
            members.append(Member(name=name, size=info.size, open=opener))
    return members


def _tar_opener(archive: tarfile.TarFile, info: tarfile.TarInfo) -> Callable[[], IO[bytes]]:
    return lambda: archive.extractfile(info)


def _check_tar_type(info: tarfile.TarInfo) -> None:
    if not (info.isreg() or info.isdir()):
        raise IntakeError(f"Member {info.name!r} is a link, device or fifo; not allowed.")
    try:
        tarfile.data_filter(info, "/nonexistent-destination")
    except tarfile.FilterError as error:
        raise IntakeError(f"Member {info.name!r} is not allowed: {error}") from None


def _check_count(count: int) -> None:
    if count > settings.ARENA_MAX_ARCHIVE_MEMBERS:
        limit = settings.ARENA_MAX_ARCHIVE_MEMBERS
        raise IntakeError(f"The bundle has more than {limit} members.")


def _check_expansion(uncompressed: int, compressed: int) -> None:
    if uncompressed > settings.ARENA_MAX_ARCHIVE_BYTES:
        limit = settings.ARENA_MAX_ARCHIVE_BYTES
        raise UploadTooLarge(f"The bundle expands beyond {limit} bytes.")
    ratio = settings.ARENA_MAX_ARCHIVE_RATIO
    if uncompressed > RATIO_FLOOR and uncompressed > ratio * max(compressed, 1):
        raise UploadTooLarge(f"The bundle expands more than {ratio}x; refusing a likely bomb.")


def _run_files(members: list[Member], stack: contextlib.ExitStack) -> RunFiles:
    members = _strip_wrapper(members)
    if len({m.name for m in members}) != len(members):
        raise IntakeError("The bundle holds two members with one name.")
    budget = _Budget(settings.ARENA_MAX_ARCHIVE_BYTES)
    by_role = {role: [m for m in members if _role(m.name) == role] for role in _ROLES}
    files = RunFiles(
        solution=None,
        transcripts=[_extract(m, budget, stack) for m in by_role["transcript"]],
    )
    if by_role["solution"]:  # without it, native sources are left like any other file
        files.solution = _extract(by_role["solution"][0], budget, stack)
        files.sidecars = [_extract(m, budget, stack) for m in by_role["sidecar"]]
    if by_role["metadata"]:  # metadata.json before result.json, as `arena submit` reads them
        chosen = min(by_role["metadata"], key=lambda m: METADATA_NAMES.index(m.name))
        files.metadata = parse_metadata(read_all(_extract(chosen, budget, stack).file))
    return files


def _strip_wrapper(members: list[Member]) -> list[Member]:
    """Drops a single top folder around the run folder (``run-42/solution.py``)."""
    members = [m for m in members if m.name.split("/")[0] not in IGNORED_TOP_DIRS]
    tops = {m.name.split("/")[0] for m in members}
    if len(tops) != 1 or tops == {"subagents"} or any("/" not in m.name for m in members):
        return members
    return [Member(m.name.split("/", 1)[1], m.size, m.open) for m in members]


_ROLES = ("solution", "metadata", "sidecar", "transcript", "ignored")


def _role(name: str) -> str:
    if name == "solution.py":
        return "solution"
    if name in METADATA_NAMES:
        return "metadata"
    # Hidden files are not sidecars: tar on macOS adds "._kernel.cu" for extended attributes.
    if "/" not in name and not name.startswith(".") and name.endswith(SIDECAR_SUFFIXES):
        return "sidecar"
    in_place = "/" not in name or name.startswith("subagents/")
    return "transcript" if in_place and name.endswith(TRANSCRIPT_SUFFIXES) else "ignored"


class _Budget:
    def __init__(self, limit: int) -> None:
        self.left = limit

    def spend(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise UploadTooLarge("The bundle expands beyond its declared sizes or the limit.")


def _extract(member: Member, budget: _Budget, stack: contextlib.ExitStack) -> IncomingFile:
    spool = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE)  # noqa: SIM115
    stack.enter_context(spool)  # closed with the bundle
    written = 0
    with member.open() as source:
        while chunk := source.read(CHUNK):
            written += len(chunk)
            budget.spend(len(chunk))
            if written > member.size:
                raise IntakeError(f"Member {member.name!r} is larger than its header says.")
            spool.write(chunk)
    spool.seek(0)
    return IncomingFile(name=member.name, file=File(spool, name=member.name.rsplit("/", 1)[-1]))
