"""Byte counting while extracting: archive headers are not trusted."""

import contextlib
import io

import pytest
from django.core.files import File

from submissions.archives import Member, _Budget, _extract, open_bundle
from submissions.uploads import IntakeError, UploadTooLarge
from tests.submissions.helpers import RUN_FOLDER, zip_bytes


def test_a_member_longer_than_its_header_says_is_refused():
    member = Member("transcript.jsonl", size=10, open=lambda: io.BytesIO(b"x" * 100))
    with contextlib.ExitStack() as stack, pytest.raises(IntakeError, match="larger than"):
        _extract(member, _Budget(10_000), stack)


def test_extraction_stops_when_the_byte_budget_runs_out():
    member = Member("transcript.jsonl", size=10**9, open=lambda: io.BytesIO(b"x" * 300_000))
    with contextlib.ExitStack() as stack, pytest.raises(UploadTooLarge):
        _extract(member, _Budget(100_000), stack)


def test_an_extracted_member_keeps_its_bytes_and_relative_name():
    member = Member("subagents/agent-1.jsonl", size=3, open=lambda: io.BytesIO(b"abc"))
    with contextlib.ExitStack() as stack:
        extracted = _extract(member, _Budget(10), stack)
        assert (extracted.name, extracted.size, extracted.file.read()) == (
            "subagents/agent-1.jsonl",
            3,
            b"abc",
        )


def test_a_zip_member_count_is_read_from_its_end_record_before_parsing(settings, monkeypatch):
    settings.ARENA_MAX_ARCHIVE_MEMBERS = 3
    data = zip_bytes(RUN_FOLDER | {"extra.txt": b"x"})

    def refuse_to_parse(*args, **kwargs):
        raise AssertionError("zipfile parsed the directory before the count was checked")

    monkeypatch.setattr("submissions.archives.zipfile.ZipFile", refuse_to_parse)
    with pytest.raises(IntakeError, match="more than 3 members"), open_bundle(as_file(data)):
        pass


def test_a_zip_directory_too_large_for_the_member_limit_is_refused(settings):
    settings.ARENA_MAX_ARCHIVE_MEMBERS = 1
    data = zip_bytes({"n" * 3000 + ".txt": b""})
    with pytest.raises(IntakeError, match="zip directory"), open_bundle(as_file(data)):
        pass


def as_file(data: bytes) -> File:
    return File(io.BytesIO(data), name="bundle.zip")
