"""Every refused upload answers 4xx with a readable reason and leaves no row and no file."""

import io
import json
import tarfile
import zipfile

import pytest
from rest_framework.test import APIClient

from tests.submissions.helpers import (
    RUN_FOLDER,
    SOLUTION,
    TRANSCRIPT,
    assert_nothing_stored,
    form,
    loose_files,
    tar_gz_bytes,
    upload,
    zip_bytes,
)

pytestmark = pytest.mark.django_db
URL = "/api/v1/runs/"


def refuse(api, data, media_root, *, status=400) -> str:
    response = api.post(URL, data, format="multipart")
    assert response.status_code == status, response.content
    assert_nothing_stored(media_root)
    return str(response.json())


@pytest.mark.parametrize("field", ["problem", "model", "harness", "hardware"])
def test_an_unknown_slug_is_refused_with_the_valid_ones(api, registry, media_root, field):
    data = form(registry, **loose_files()) | {field: "no-such-thing"}
    message = refuse(api, data, media_root)

    assert "no-such-thing" in message
    assert registry[field].slug in message


def test_a_slug_with_a_nul_character_is_refused_as_unknown(api, registry, media_root):
    data = form(registry, **loose_files()) | {"model": "claude\x00"}
    assert registry["model"].slug in refuse(api, data, media_root)


def test_an_inactive_problem_is_refused(api, registry, media_root):
    registry["problem"].is_active = False
    registry["problem"].save()
    assert "Unknown problem" in refuse(api, form(registry, **loose_files()), media_root)


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"\x7fELF\x02\x01\x00\x00binary", "binary"), (b"x = '\xff\xfe'\n", "UTF-8")],
    ids=["binary", "latin-1"],
)
def test_a_solution_that_is_not_utf8_text_is_refused(api, registry, media_root, content, reason):
    data = form(registry, **loose_files(solution=upload("solution.py", content)))
    assert reason in refuse(api, data, media_root)


def test_an_upload_without_a_transcript_is_refused(api, registry, media_root):
    data = form(registry, solution=upload("solution.py", SOLUTION))
    assert "No transcript" in refuse(api, data, media_root)


def test_an_empty_transcript_is_refused(api, registry, media_root):
    data = form(registry, **loose_files(transcript=[upload("transcript.jsonl", b"")]))
    assert "empty" in refuse(api, data, media_root)


def test_an_oversize_solution_is_refused(api, registry, media_root, settings):
    settings.ARENA_MAX_SOLUTION_BYTES = 16
    assert "limit" in refuse(api, form(registry, **loose_files()), media_root, status=413)


def test_oversize_transcripts_are_refused(api, registry, media_root, settings):
    settings.ARENA_MAX_TRANSCRIPT_BYTES = len(TRANSCRIPT) + 5
    files = loose_files(
        transcript=[upload("a.jsonl", TRANSCRIPT), upload("b.jsonl", TRANSCRIPT + b"\n")]
    )
    assert "limit" in refuse(api, form(registry, **files), media_root, status=413)


def test_a_body_larger_than_any_run_is_refused_before_it_is_read(api, registry, media_root):
    response = api.post(
        URL, data=b"x", content_type="multipart/form-data; boundary=x", CONTENT_LENGTH=2**40
    )
    assert response.status_code == 413
    assert_nothing_stored(media_root)


def test_a_session_upload_too_large_is_refused_before_its_csrf_check_reads_it(
    registry, media_root, uploader
):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(uploader)
    client.cookies["csrftoken"] = "a" * 32
    response = client.post(
        URL, data=b"x", content_type="multipart/form-data; boundary=x", CONTENT_LENGTH=2**40
    )
    assert response.status_code == 413
    assert_nothing_stored(media_root)


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"cost": NaN}', "not valid JSON"),
        ('{"note": "nul \\u0000 byte"}', "NUL"),
        ("[" * 5000 + "]" * 5000, "JSON"),
        ('{"cost": 1e400}', "too large"),
        ('{"note": "half \\ud800 a pair"}', "lone surrogate"),
    ],
    ids=["malformed", "not-an-object", "nan", "nul", "deep", "overflow", "surrogate"],
)
def test_bad_metadata_is_refused(api, registry, media_root, metadata, reason):
    data = form(registry, metadata=metadata, **loose_files())
    assert reason in refuse(api, data, media_root)


@pytest.mark.parametrize("name", ["../escape.jsonl", "/etc/passwd", "a/../../b.jsonl", "C:x.jsonl"])
def test_a_transcript_name_that_leaves_the_run_folder_is_refused(api, registry, media_root, name):
    data = form(registry, **loose_files(transcript_name=[name]))
    refuse(api, data, media_root)


def test_transcript_names_must_match_the_transcripts(api, registry, media_root):
    data = form(registry, **loose_files(transcript_name=["a.jsonl", "b.jsonl"]))
    assert "transcript_name" in refuse(api, data, media_root)


def test_a_bundle_and_loose_files_together_are_refused(api, registry, media_root):
    data = form(registry, bundle=upload("run.zip", zip_bytes(RUN_FOLDER)), **loose_files())
    assert "not both" in refuse(api, data, media_root)


def test_a_bundle_that_is_not_an_archive_is_refused(api, registry, media_root):
    data = form(registry, bundle=upload("run.zip", b"just some text"))
    assert ".zip or .tar.gz" in refuse(api, data, media_root)


@pytest.mark.parametrize("pack", [zip_bytes, tar_gz_bytes], ids=["zip", "tar.gz"])
def test_a_truncated_bundle_is_refused_as_corrupt(api, registry, media_root, pack):
    data = form(registry, bundle=upload("run", pack(RUN_FOLDER)[:-40]))
    assert "corrupt" in refuse(api, data, media_root)


def test_a_bundle_without_a_transcript_is_refused(api, registry, media_root):
    data = form(registry, bundle=upload("run.zip", zip_bytes({"solution.py": SOLUTION})))
    assert "No transcript" in refuse(api, data, media_root)


@pytest.mark.parametrize("name", ["../transcript.jsonl", "/abs/transcript.jsonl"])
def test_bundle_members_that_escape_are_refused(api, registry, media_root, name):
    members = RUN_FOLDER | {name: TRANSCRIPT}
    for pack in (zip_bytes, tar_gz_bytes):
        refuse(api, form(registry, bundle=upload("run", pack(members))), media_root)


def test_a_tar_member_name_that_is_not_utf8_is_refused(api, registry, media_root):
    buffer = io.BytesIO()
    # GNU headers keep raw name bytes; latin-1 writes "\xff" as the single byte 0xff
    with tarfile.open(
        fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT, encoding="latin-1"
    ) as archive:
        for name, content in {"solution.py": SOLUTION, "transcript\xff.jsonl": TRANSCRIPT}.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    data = form(registry, bundle=upload("run.tgz", buffer.getvalue()))
    assert "Unacceptable file name" in refuse(api, data, media_root)


def _link(name: str, kind: bytes, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize(
    "special",
    [
        _link("transcript.jsonl", tarfile.SYMTYPE, "/etc/passwd"),
        _link("transcript.jsonl", tarfile.LNKTYPE, "solution.py"),
        _link("dev", tarfile.CHRTYPE),
        _link("pipe", tarfile.FIFOTYPE),
    ],
    ids=["symlink", "hardlink", "device", "fifo"],
)
def test_links_devices_and_fifos_in_a_tar_bundle_are_refused(api, registry, media_root, special):
    bundle = tar_gz_bytes({"solution.py": SOLUTION}, special=[special])
    message = refuse(api, form(registry, bundle=upload("run.tgz", bundle)), media_root)
    assert "not allowed" in message


@pytest.mark.parametrize("mode", [0o120777, 0o020644, 0o010644], ids=["symlink", "device", "fifo"])
def test_links_and_special_files_in_a_zip_bundle_are_refused(api, registry, media_root, mode):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("solution.py", SOLUTION)
        special = zipfile.ZipInfo("transcript.jsonl")
        special.external_attr = (mode << 16) | 0x20
        archive.writestr(special, "/etc/passwd")
    data = form(registry, bundle=upload("run.zip", buffer.getvalue()))
    assert "link or special file" in refuse(api, data, media_root)


@pytest.mark.parametrize(
    ("member", "content", "reason"),
    [
        ("result.json", b"{not json", "not valid JSON"),
        ("solution.py", b"\x7fELF\x00binary", "binary"),
    ],
    ids=["malformed-result-json", "binary-solution"],
)
def test_bad_files_inside_a_bundle_are_refused(api, registry, media_root, member, content, reason):
    members = RUN_FOLDER | {member: content}
    for pack in (zip_bytes, tar_gz_bytes):
        data = form(registry, bundle=upload("run", pack(members)))
        assert reason in refuse(api, data, media_root)


def test_a_bundle_with_too_many_members_is_refused(api, registry, media_root, settings):
    settings.ARENA_MAX_ARCHIVE_MEMBERS = 3
    for pack in (zip_bytes, tar_gz_bytes):
        message = refuse(api, form(registry, bundle=upload("run", pack(RUN_FOLDER))), media_root)
        assert "more than 3 members" in message


@pytest.mark.parametrize("pack", [zip_bytes, tar_gz_bytes], ids=["zip", "tar.gz"])
def test_a_compression_bomb_is_refused(api, registry, media_root, pack):
    members = RUN_FOLDER | {"padding.bin": bytes(8 * 1024 * 1024)}
    data = form(registry, bundle=upload("run", pack(members)))
    assert "bomb" in refuse(api, data, media_root, status=413)


def test_a_tar_header_that_inflates_like_a_bomb_is_refused(api, registry, media_root):
    # tarfile reads a pax record whole before its member reaches any check
    notes = tarfile.TarInfo("notes.txt")
    notes.pax_headers = {"comment": "a" * 16 * 1024 * 1024}
    bundle = tar_gz_bytes(RUN_FOLDER, special=[notes])
    data = form(registry, bundle=upload("run.tgz", bundle))
    assert "bomb" in refuse(api, data, media_root, status=413)


def test_folders_count_toward_the_member_limit_of_a_tar_bundle(api, registry, media_root, settings):
    settings.ARENA_MAX_ARCHIVE_MEMBERS = len(RUN_FOLDER) + 1
    folders = [_link(f"empty-{i}", tarfile.DIRTYPE) for i in range(2)]
    bundle = tar_gz_bytes(RUN_FOLDER, special=folders)
    message = refuse(api, form(registry, bundle=upload("run.tgz", bundle)), media_root)
    assert "more than 5 members" in message


def test_a_bundle_larger_than_the_limit_when_unpacked_is_refused(
    api, registry, media_root, settings
):
    settings.ARENA_MAX_ARCHIVE_BYTES = 100
    data = form(registry, bundle=upload("run.zip", zip_bytes(RUN_FOLDER)))
    assert "expands beyond" in refuse(api, data, media_root, status=413)


def test_a_failure_while_storing_removes_the_files_already_written(
    api, registry, media_root, monkeypatch
):
    from submissions.services import runs as services

    def fail(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(services, "_store_transcript", fail)
    with pytest.raises(RuntimeError):
        api.post(URL, form(registry, **loose_files()), format="multipart")
    assert_nothing_stored(media_root)


def test_more_files_than_a_request_may_carry_are_refused(api, registry, media_root, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    transcripts = [upload(f"t{i}.jsonl", TRANSCRIPT) for i in range(3)]
    data = form(registry, **loose_files(transcript=transcripts))
    assert "More than 2 files" in refuse(api, data, media_root)


def test_an_oversize_json_body_is_refused_too(api, registry, media_root, settings):
    # DRF applies DATA_UPLOAD_MAX_MEMORY_SIZE to JSON bodies only from 3.17.2 on
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = {key: entry.slug for key, entry in registry.items()} | {"metadata": "x" * 2000}
    response = api.post(URL, body, format="json")
    assert response.status_code == 413
    assert "form fields exceed" in response.json()["detail"]
    assert_nothing_stored(media_root)


def test_oversize_form_fields_are_refused(api, registry, media_root, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    data = form(registry, metadata='{"x": "' + "y" * 2000 + '"}', **loose_files())
    assert "form fields exceed" in refuse(api, data, media_root, status=413)


def test_the_metadata_cap_counts_bytes_not_characters(api, registry, media_root, settings):
    settings.ARENA_MAX_METADATA_BYTES = 1000
    note = "é" * 600  # 600 characters, 1,200 bytes in UTF-8
    data = form(registry, metadata=json.dumps({"note": note}, ensure_ascii=False), **loose_files())
    assert "Metadata exceeds 1000 bytes" in refuse(api, data, media_root, status=413)
