import hashlib
import io
import tarfile

import pytest

from submissions.models import Run, Solution, TranscriptFile
from tests.submissions.helpers import (
    RUN_FOLDER,
    SOLUTION,
    SUBAGENT,
    TRANSCRIPT,
    form,
    loose_files,
    stored_files,
    tar_gz_bytes,
    upload,
    zip_bytes,
)

pytestmark = pytest.mark.django_db
URL = "/api/v1/runs/"


def test_loose_files_create_a_received_run(api, registry, uploader):
    response = api.post(URL, form(registry, effort="high", **loose_files()), format="multipart")

    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    body = response.json()
    assert body["id"] == str(run.uuid)
    assert body["status"] == "received"
    assert body["url"].endswith(f"/runs/{run.uuid}/")
    assert body["status_url"].endswith(f"/api/v1/runs/{run.uuid}/")
    assert (run.submitter, run.effort, run.problem_version) == (
        uploader,
        "high",
        registry["problem"].version,
    )
    assert run.solution.sha256 == hashlib.sha256(SOLUTION).hexdigest()
    assert run.solution.code == SOLUTION.decode()
    assert not run.published


def test_transcripts_are_stored_byte_for_byte_with_their_relative_names(api, registry):
    files = loose_files(
        transcript=[upload("a.jsonl", TRANSCRIPT), upload("b.jsonl", SUBAGENT)],
        transcript_name=["transcript.jsonl", "subagents/agent-abc.jsonl"],
    )
    response = api.post(URL, form(registry, **files), format="multipart")

    assert response.status_code == 201, response.json()
    stored = {t.name: t for t in TranscriptFile.objects.all()}
    assert sorted(stored) == ["subagents/agent-abc.jsonl", "transcript.jsonl"]
    assert stored["subagents/agent-abc.jsonl"].file.read() == SUBAGENT
    assert stored["transcript.jsonl"].sha256 == hashlib.sha256(TRANSCRIPT).hexdigest()
    assert stored["transcript.jsonl"].size == len(TRANSCRIPT)


def test_metadata_json_fills_the_run_columns(api, registry):
    metadata = (
        '{"num_turns": 12, "usage": {"input_tokens": 900, "output_tokens": 40}, "cost_usd": 2.5}'
    )
    response = api.post(URL, form(registry, metadata=metadata, **loose_files()), format="multipart")

    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert (run.turns, run.input_tokens, run.output_tokens, run.cost_usd) == (12, 900, 40, 2.5)
    assert run.metadata["num_turns"] == 12


def test_metadata_counts_too_large_for_their_columns_stay_in_the_metadata_only(api, registry):
    metadata = '{"num_turns": 3000000000, "usage": {"input_tokens": 3000000000}}'
    response = api.post(URL, form(registry, metadata=metadata, **loose_files()), format="multipart")

    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert (run.turns, run.input_tokens) == (None, 3_000_000_000)
    assert run.metadata["num_turns"] == 3_000_000_000


@pytest.mark.parametrize("pack", [zip_bytes, tar_gz_bytes], ids=["zip", "tar.gz"])
def test_a_bundle_of_the_run_folder_is_unpacked(api, registry, pack):
    bundle = upload("run.bundle", pack(RUN_FOLDER))
    response = api.post(URL, form(registry, bundle=bundle), format="multipart")

    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert run.solution.code == SOLUTION.decode()
    names = sorted(run.transcript_files.values_list("name", flat=True))
    assert names == ["subagents/agent-abc.jsonl", "transcript.jsonl"]
    assert (run.turns, run.cost_usd, run.wall_time_s) == (7, 1.25, 90.0)


def test_a_bundle_wrapped_in_one_folder_is_unwrapped(api, registry):
    members = {f"run-42/{name}": content for name, content in RUN_FOLDER.items()}
    members["__MACOSX/run-42/._solution.py"] = b"\x00\x05"
    members["run-42/notes/scratch.txt"] = b"ignored"
    bundle = upload("run.zip", zip_bytes(members))
    response = api.post(URL, form(registry, bundle=bundle), format="multipart")

    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert run.solution is not None
    assert run.transcript_files.count() == 2


def test_a_codex_session_bundle_without_a_solution_is_accepted(api, registry):
    bundle = upload("run.tar.gz", tar_gz_bytes({"codex_session.jsonl": TRANSCRIPT}))
    response = api.post(URL, form(registry, bundle=bundle), format="multipart")

    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert run.solution is None
    assert run.transcript_files.get().name == "codex_session.jsonl"


def test_a_missing_solution_is_accepted_for_grading_to_report(api, registry):
    files = loose_files()
    del files["solution"]
    response = api.post(URL, form(registry, **files), format="multipart")

    assert response.status_code == 201, response.json()
    assert Run.objects.get().solution is None


def test_a_solution_that_does_not_parse_is_stored_as_is(api, registry):
    broken = b"def ModelNew(:\n    return\n"
    files = loose_files(solution=upload("solution.py", broken))
    response = api.post(URL, form(registry, **files), format="multipart")

    assert response.status_code == 201, response.json()
    assert Run.objects.get().solution.code == broken.decode()


def test_an_identical_upload_returns_the_existing_run(api, registry, media_root):
    first = api.post(URL, form(registry, **loose_files()), format="multipart")
    files_after_first = stored_files(media_root)
    again = api.post(URL, form(registry, **loose_files()), format="multipart")

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert Run.objects.count() == 1
    assert stored_files(media_root) == files_after_first


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"effort": "high"}, "another effort;"),
        ({"metadata": '{"num_turns": 9}'}, "another metadata;"),
        ({"effort": "low", "metadata": '{"num_turns": 3}'}, "another effort and metadata;"),
    ],
)
def test_the_same_files_labelled_otherwise_are_a_conflict_that_drops_nothing_silently(
    api, registry, media_root, changes, named
):
    first = api.post(URL, form(registry, **loose_files()), format="multipart")
    files_after_first = stored_files(media_root)
    again = api.post(URL, form(registry, **changes, **loose_files()), format="multipart")

    assert (first.status_code, again.status_code) == (201, 409)
    body = again.json()
    assert named in body["detail"] and "nothing was stored or changed" in body["detail"]
    assert body["id"] == first.json()["id"] and body["url"] == first.json()["url"]
    run = Run.objects.get()
    assert (run.effort, run.metadata) == ("", {})
    assert stored_files(media_root) == files_after_first


@pytest.mark.parametrize("name", ["metadata.json", "result.json"])
def test_a_bundle_reads_either_metadata_name_of_a_run_folder(api, registry, name):
    members = {**RUN_FOLDER}
    members[name] = members.pop("result.json")
    response = api.post(
        URL, form(registry, bundle=upload("run.zip", zip_bytes(members))), format="multipart"
    )

    assert response.status_code == 201, response.json()
    run = Run.objects.get()
    assert (run.turns, run.cost_usd) == (7, 1.25)
    assert name not in run.transcript_files.values_list("name", flat=True)


def test_another_submitters_identical_upload_is_a_run_of_its_own(api, other_api, registry):
    first = api.post(URL, form(registry, **loose_files()), format="multipart")
    again = other_api.post(URL, form(registry, **loose_files()), format="multipart")

    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json()["id"] != first.json()["id"]
    assert sorted(Run.objects.values_list("submitter__username", flat=True)) == [
        "other",
        "uploader",
    ]
    assert Solution.objects.count() == 1  # the file itself is still stored once


def test_two_runs_with_one_solution_share_its_stored_file(api, registry):
    api.post(URL, form(registry, **loose_files()), format="multipart")
    other = loose_files(transcript=[upload("transcript.jsonl", SUBAGENT)])
    response = api.post(URL, form(registry, **other), format="multipart")

    assert response.status_code == 201
    assert Run.objects.count() == 2
    assert Solution.objects.count() == 1


def test_a_person_can_upload_through_the_browser_form(client, registry, uploader):
    client.force_login(uploader)
    response = client.post(URL, form(registry, **loose_files()))

    assert response.status_code == 201, response.content
    assert Run.objects.get().submitter == uploader


def test_the_browsable_api_renders_the_upload_form(client, registry, uploader):
    client.force_login(uploader)
    response = client.get(URL, HTTP_ACCEPT="text/html")

    assert response.status_code == 200  # the list of published runs, with the form for POST
    assert b'name="transcript" type="file" multiple' in response.content


def test_grading_and_transcript_parsing_are_queued_after_commit(
    api, registry, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("submissions.services.evaluations.send_evaluation", sent.append)
    monkeypatch.setattr("submissions.tasks.process_transcript.apply_async", lambda **kw: None)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = api.post(URL, form(registry, **loose_files()), format="multipart")

    assert response.status_code == 201
    assert len(callbacks) >= 2
    run = Run.objects.get()
    assert [e.run for e in sent] == [run]
    assert run.evaluations.get().hardware == registry["hardware"]


def test_a_tar_made_with_dot_paths_is_accepted(api, registry):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        folder = tarfile.TarInfo(".")
        folder.type = tarfile.DIRTYPE
        archive.addfile(folder)
        for name, content in RUN_FOLDER.items():
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    bundle = upload("run.tar.gz", buffer.getvalue())
    response = api.post(URL, form(registry, bundle=bundle), format="multipart")

    assert response.status_code == 201, response.json()
    assert Run.objects.get().transcript_files.count() == 2
