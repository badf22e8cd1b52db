"""Hypothesis over the bundle intake: random and mutated zip and tar.gz archives (names, sizes,
links, devices, folders, damaged bytes) either give run files that are safe to store or an
IntakeError with a message; never another exception."""

import io
import stat
import tarfile
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from submissions.archives import open_bundle
from submissions.uploads import IntakeError, safe_relative_name

pytestmark = pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")  # on purpose
LIMITS = override_settings(
    ARENA_MAX_ARCHIVE_MEMBERS=12,
    ARENA_MAX_ARCHIVE_BYTES=64 * 1024,
    ARENA_MAX_ARCHIVE_RATIO=20,
    FILE_UPLOAD_MAX_MEMORY_SIZE=4096,
)
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
NAMES = [
    "solution.py",
    "transcript.jsonl",
    "session.json",
    "result.json",
    "subagents/agent-1.jsonl",
    "run-7/solution.py",
    "run-7/transcript.jsonl",
    "__MACOSX/._solution.py",
    "notes/readme.md",
    "../escape.jsonl",
    "/etc/passwd",
    "a/../../b.jsonl",
    "C:/windows.jsonl",
    "back\\slash.jsonl",
    "./transcript.jsonl",
    "nul\x00.jsonl",
    "x" * 300 + ".jsonl",
    "",
    ".",
]
KINDS = ["file", "file", "file", "dir", "symlink", "hardlink", "fifo", "device"]
CONTENTS = st.one_of(
    st.binary(max_size=600),
    st.sampled_from([b'{"type": "user"}\n', b"print('hi')\n", b'{"num_turns": 3}', b"\x00" * 9]),
    st.integers(0, 40_000).map(lambda n: b"a" * n),  # compresses far past the ratio limit
)
MEMBERS = st.lists(
    st.tuples(
        st.one_of(st.sampled_from(NAMES), st.text(max_size=24)), st.sampled_from(KINDS), CONTENTS
    ),
    max_size=16,
)


def tar_gz(members) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        for name, kind, content in members:
            info = tarfile.TarInfo(name)
            info.type = {
                "file": tarfile.REGTYPE,
                "dir": tarfile.DIRTYPE,
                "symlink": tarfile.SYMTYPE,
                "hardlink": tarfile.LNKTYPE,
                "fifo": tarfile.FIFOTYPE,
                "device": tarfile.CHRTYPE,
            }[kind]
            info.linkname = "../../etc/passwd" if "link" in kind else ""
            info.size = len(content) if kind == "file" else 0
            archive.addfile(info, io.BytesIO(content) if kind == "file" else None)
    return buffer.getvalue()


def zip_archive(members) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, kind, content in members:
            info = zipfile.ZipInfo(name.rstrip("/") + "/" if kind == "dir" else name or "_")
            mode = {"symlink": stat.S_IFLNK, "dir": stat.S_IFDIR, "fifo": stat.S_IFIFO}.get(
                kind, stat.S_IFREG
            )
            info.external_attr = (mode | 0o644) << 16
            archive.writestr(info, b"" if kind == "dir" else content)
    return buffer.getvalue()


@st.composite
def damaged(draw, data: bytes) -> bytes:
    """The archive with a few bytes overwritten, a slice cut out, or its tail cut off."""
    if not data or draw(st.booleans()):
        return data
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        start = draw(st.integers(0, len(data)))
        del data[start : start + draw(st.integers(0, 64))]
    return bytes(data[: draw(st.integers(0, len(data)))] if draw(st.booleans()) else data)


SAFE_MEMBERS = st.lists(
    st.tuples(st.sampled_from(NAMES[:9]), st.just("file"), CONTENTS),
    min_size=1,
    max_size=8,
    unique_by=lambda member: member[0],
)


def archives():
    members = st.one_of(MEMBERS, SAFE_MEMBERS)
    built = st.one_of(members.map(tar_gz), members.map(zip_archive))
    return st.one_of(built.flatmap(damaged), st.binary(max_size=300))


def check_bundle(data: bytes) -> None:
    upload = SimpleUploadedFile("run.tar.gz", data)
    try:
        with open_bundle(upload) as files:
            names = [t.name for t in files.transcripts]
            assert all(safe_relative_name(name) == name for name in names)
            assert len(set(names)) == len(names)
            assert sum(t.size for t in files.transcripts) <= 64 * 1024
            assert isinstance(files.metadata, dict)
        event("accepted")
    except IntakeError as error:
        assert str(error)
        event("refused")


@LIMITS
@FUZZ
@given(data=archives())
def test_any_archive_is_either_safe_run_files_or_an_intake_error(data):
    check_bundle(data)


@LIMITS
@FUZZ
@given(members=st.one_of(MEMBERS, SAFE_MEMBERS), as_zip=st.booleans())
def test_well_formed_archives_of_hostile_members_are_judged_member_by_member(members, as_zip):
    check_bundle(zip_archive(members) if as_zip else tar_gz(members))
