import gzip
import hashlib
import json
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse
from django.utils.html import escape

from submissions import tasks
from submissions.models import Run, TranscriptFile
from submissions.selectors import public_result
from submissions.services.transcripts import load_session, process_transcript
from tests.factories import make_evaluation, make_result, make_run, make_user
from tests.submissions.helpers import form, loose_files

SAMPLES = Path(__file__).resolve().parent.parent / "transcripts" / "samples"
CLAUDE_SAMPLE = SAMPLES / "claude-jsonl-edits-3fe1b6bc.jsonl"

pytestmark = pytest.mark.django_db


def attach_transcript(run: Run, name: str, content: bytes) -> None:
    stored = TranscriptFile(
        run=run, name=name, sha256=hashlib.sha256(content).hexdigest(), size=len(content)
    )
    stored.file.save(name, ContentFile(content), save=True)


def parsed_run(content: bytes | None = None, **fields) -> Run:
    run = make_run(**fields)
    attach_transcript(run, "transcript.jsonl", content or CLAUDE_SAMPLE.read_bytes())
    process_transcript(run=run)
    run.refresh_from_db()
    return run


def test_upload_enqueues_transcript_processing_after_commit(
    api, registry, monkeypatch, django_capture_on_commit_callbacks
):
    queued = []
    monkeypatch.setattr(
        tasks.process_transcript, "apply_async", lambda kwargs, **kw: queued.append(kwargs)
    )
    monkeypatch.setattr("submissions.services.runs.enqueue_evaluation", lambda **kw: None)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/runs/", form(registry, **loose_files()))
    assert response.status_code == 201
    run = Run.objects.get()
    assert queued == [{"run_id": run.pk}]
    assert run.transcript_status == Run.TranscriptStatus.PENDING


def test_processing_stores_the_normalized_session_with_secrets_redacted():
    secret = b"sk-ant-api03-" + b"A" * 40
    content = CLAUDE_SAMPLE.read_bytes()
    line = (
        b'{"type":"user","uuid":"u-secret","sessionId":"3fe1b6bc","timestamp":'
        b'"2025-01-01T00:00:00Z","message":{"role":"user","content":"key ' + secret + b'"}}\n'
    )
    run = parsed_run(content + line)
    assert run.transcript_status == Run.TranscriptStatus.PARSED
    session = load_session(run)
    tool_calls = [e for _, s in session.walk() for e in s.events if e.kind == "tool_call"]
    assert len(tool_calls) == 76
    with run.normalized_transcript.open("rb") as handle:
        assert secret not in gzip.decompress(handle.read())


def test_unreadable_transcript_marks_the_run_and_keeps_it(client):
    run = parsed_run(b"\x00\x01 not a transcript at all\n")
    assert run.transcript_status == Run.TranscriptStatus.FAILED
    assert run.transcript_error
    assert run.transcript_files.count() == 1
    page = client.get(reverse("submissions:run-transcript", kwargs={"run_id": run.uuid}))
    assert page.status_code == 422  # the page exists; the transcript could not be read
    assert "could not be read" in page.content.decode()
    run_page = client.get(run.get_absolute_url())
    assert run_page.status_code == 200
    assert escape(run.transcript_error) in run_page.content.decode()


def test_a_failure_after_parsing_marks_the_run_failed_instead_of_pending(monkeypatch):
    def overflowing(session):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("submissions.services.transcripts.redact_session", overflowing)
    run = parsed_run()
    assert run.transcript_status == Run.TranscriptStatus.FAILED
    assert run.transcript_error == "the transcript could not be read (RecursionError)"
    assert not run.normalized_transcript


def test_transcript_page_is_the_standalone_viewer_locked_down(client):
    run = parsed_run()
    page = client.get(reverse("submissions:run-transcript", kwargs={"run_id": run.uuid}))
    assert page.status_code == 200
    assert "default-src 'none'" in page["Content-Security-Policy"]
    html = page.content.decode()
    assert 'http-equiv="Content-Security-Policy"' in html
    assert run.problem.title in html


def test_transcript_download_is_an_attachment(client):
    run = parsed_run()
    url = reverse("submissions:run-transcript-download", kwargs={"run_id": run.uuid})
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.uuid}.html"'


def test_transcript_never_shows_held_out_parameters(client):
    run = parsed_run()
    make_evaluation(run)  # its hidden shape is batch=4099117, dim=12289333
    html = client.get(
        reverse("submissions:run-transcript", kwargs={"run_id": run.uuid})
    ).content.decode()
    assert "Evaluation" in html
    assert "4099117" not in html and "12289333" not in html


def test_the_result_given_to_the_transcript_page_carries_no_held_out_parameters():
    result = make_result(hidden_params={"batch": 4099117, "dim": 12289333})
    hidden = result["shapes"][1]
    hidden |= {
        "baseline_key": "v1:batch=4099117,dim=12289333:h100:2.8",
        "worst_index": [4099116, 12289332],
    }
    hidden["error"] = "output 0: shape (4099117, 12289333), expected (4099117, 12289334)"
    evaluation = make_evaluation(make_run(), result=result)

    public = json.dumps(public_result(evaluation))

    assert "4099117" not in public and "12289333" not in public
    assert "1024" in public  # the visible shape keeps its parameters


def test_unpublished_transcript_is_hidden_from_others(client):
    owner = make_user("owner")
    run = parsed_run(published=False, submitter=owner)
    url = reverse("submissions:run-transcript", kwargs={"run_id": run.uuid})
    assert client.get(url).status_code == 404
    client.force_login(owner)
    assert client.get(url).status_code == 200


def test_run_page_links_the_parsed_transcript(client):
    run = parsed_run()
    html = client.get(run.get_absolute_url()).content.decode()
    assert reverse("submissions:run-transcript", kwargs={"run_id": run.uuid}) in html
    assert reverse("submissions:run-transcript-download", kwargs={"run_id": run.uuid}) in html


class CountingRenderer:
    def __init__(self, monkeypatch):
        from submissions.services import transcripts as transcript_pages

        self.calls = 0
        self.real = transcript_pages.render_html
        monkeypatch.setattr(transcript_pages, "render_html", self)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.real(*args, **kwargs)


def transcript_html(client, run) -> str:
    page = client.get(reverse("submissions:run-transcript", kwargs={"run_id": run.uuid}))
    assert page.status_code == 200
    return page.content.decode()


def test_a_page_is_rendered_once_and_then_read_back(client, monkeypatch):
    run = parsed_run()
    renderer = CountingRenderer(monkeypatch)
    first = transcript_html(client, run)
    again = transcript_html(client, run)
    download = client.get(
        reverse("submissions:run-transcript-download", kwargs={"run_id": run.uuid})
    )
    assert renderer.calls == 1
    assert again == first == download.content.decode()


def test_a_new_evaluation_or_a_new_session_renders_the_page_again(client, monkeypatch):
    from django.core.files.storage import default_storage

    run = parsed_run()
    renderer = CountingRenderer(monkeypatch)
    before = transcript_html(client, run)
    make_evaluation(run, score=0.4321)
    after = transcript_html(client, run)
    assert renderer.calls == 2
    assert "0.4321" in after and "0.4321" not in before
    folder = f"runs/{run.uuid}/pages"
    assert len(default_storage.listdir(folder)[1]) == 1  # the stale page is gone

    process_transcript(run=run)  # a re-parse (after a parser fix, say) drops the pages
    assert default_storage.listdir(folder)[1] == []
    run.refresh_from_db()
    transcript_html(client, run)
    assert renderer.calls == 3


def test_a_page_cut_short_is_never_served_and_is_rendered_again(client, monkeypatch):
    from django.core.files.storage import default_storage

    run = parsed_run()
    renderer = CountingRenderer(monkeypatch)
    whole = transcript_html(client, run)
    folder = f"runs/{run.uuid}/pages"
    [name] = default_storage.listdir(folder)[1]
    path = Path(default_storage.path(f"{folder}/{name}"))
    path.write_bytes(path.read_bytes()[:1000])  # as a killed worker or a full disk would leave it

    assert transcript_html(client, run) == whole
    assert renderer.calls == 2
    assert transcript_html(client, run) == whole and renderer.calls == 2  # the rewrite is whole
    assert default_storage.listdir(folder)[1] == [name]  # in place of the cut one


def test_a_transcript_still_being_read_answers_accepted_with_a_retry(client):
    run = make_run()
    for name in ("submissions:run-transcript", "submissions:run-transcript-download"):
        page = client.get(reverse(name, kwargs={"run_id": run.uuid}))
        assert (page.status_code, page["Retry-After"]) == (202, "10")
        assert run.get_absolute_url() in page.content.decode()


def test_the_transcript_page_links_back_to_its_run_in_the_served_and_downloaded_file(client):
    run = parsed_run()
    back = f'<a href="http://testserver{run.get_absolute_url()}">'
    for name in ("submissions:run-transcript", "submissions:run-transcript-download"):
        page = client.get(reverse(name, kwargs={"run_id": run.uuid}))
        assert back in page.content.decode(), name
