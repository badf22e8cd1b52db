"""Byte counting while extracting: archive headers are not trusted."""

import contextlib
import io

import pytest

from submissions.archives import Member, _Budget, _extract
from submissions.uploads import IntakeError, UploadTooLarge


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
