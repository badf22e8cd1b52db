"""``arena submit`` and ``arena login`` against the live server: uploads with a progress bar,
retries without duplicates, --wait, and a clear failure for each bad input."""

import http.client
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from arena_cli import client as client_module
from arena_cli.exits import AUTH, BAD_INPUT, OK, UNREACHABLE
from arena_cli.main import main
from arena_cli.submit import score_text
from submissions.models import Run
from submissions.templatetags.arena_format import score as page_score

pytestmark = pytest.mark.django_db(transaction=True)

SAMPLES = Path(__file__).resolve().parents[1] / "transcripts" / "samples"
LABELS = ["--problem", "softmax", "--model", "claude-opus-4-5", "--harness", "claude-code"]


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    monkeypatch.setattr(client_module.Client, "sleep", staticmethod(lambda seconds: None))


def submit(folder, server, token, *extra):
    args = ["submit", str(folder), *LABELS, "--url", server.url, "--token", token, *extra]
    return main(args)


def test_submit_uploads_the_example_run_and_waits_for_its_verdict(
    server, token, run_folder, capsys
):
    assert submit(run_folder, server, token, "--wait") == OK
    out, err = capsys.readouterr()
    run = Run.objects.get()
    assert "upload [" in err and "100%" in err
    assert "solution.py, 1 transcript file(s) (transcript.jsonl) and metadata" in err
    assert f"run {run.uuid} (new run)" in out
    assert "verdict: ok" in out
    assert f"run: {server.url}/runs/{run.uuid}/" in out
    assert run.transcript_files.get().name == "transcript.jsonl"
    assert run.metadata["turns"] == 7


def test_a_second_submit_of_the_same_folder_answers_the_same_run(server, token, run_folder, capsys):
    assert submit(run_folder, server, token) == OK
    assert submit(run_folder, server, token) == OK
    out = capsys.readouterr().out
    assert "identical to an earlier upload, same run" in out
    assert Run.objects.count() == 1


def test_a_connection_lost_after_sending_is_retried_without_a_duplicate(
    server, token, run_folder, monkeypatch, capsys
):
    real = http.client.HTTPConnection.getresponse
    calls = []

    def drop_first_answer(connection):
        response = real(connection)
        calls.append(response.status)
        if len(calls) == 1:  # the server stored the run; its answer never arrives
            response.read()
            raise ConnectionResetError("connection reset by peer")
        return response

    monkeypatch.setattr(http.client.HTTPConnection, "getresponse", drop_first_answer)
    assert submit(run_folder, server, token) == OK
    assert calls == [201, 200]
    assert Run.objects.count() == 1
    assert "retrying (1/3) after: connection reset by peer" in capsys.readouterr().err


def test_a_server_that_is_down_fails_after_the_retries(run_folder, capsys):
    code = submit(run_folder, type("S", (), {"url": "http://127.0.0.1:9"}), "t", "--retries", "2")
    assert code == UNREACHABLE
    err = capsys.readouterr().err
    assert "no answer from http://127.0.0.1:9 after 3 tries" in err
    assert "Is the server running?" in err


def test_a_bad_token_is_refused_with_how_to_get_one(server, run_folder, capsys):
    assert submit(run_folder, server, "not-a-token") == AUTH
    err = capsys.readouterr().err
    assert "401" in err and "Invalid, expired or revoked token" in err
    assert "manage.py create_api_token" in err and "arena login" in err
    assert Run.objects.count() == 0


def test_no_token_at_all_is_refused_before_anything_is_sent(server, run_folder, capsys):
    assert main(["submit", str(run_folder), *LABELS, "--url", server.url]) == AUTH
    assert "no API token" in capsys.readouterr().err


def test_an_unknown_model_names_the_known_ones(server, token, run_folder, capsys):
    args = ["submit", str(run_folder), "--problem", "softmax", "--model", "gpt-9"]
    code = main([*args, "--harness", "claude-code", "--url", server.url, "--token", token])
    assert code == BAD_INPUT
    err = capsys.readouterr().err
    assert "model: Unknown model 'gpt-9'. Valid:" in err and "claude-opus-4-5" in err


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda folder: (folder / "solution.py").unlink(), "no solution.py at the top"),
        (lambda folder: shutil.rmtree(folder), "no such folder"),
        (lambda folder: (folder / "transcript.jsonl").unlink(), "no transcript found"),
        (lambda folder: (folder / "metadata.json").write_text("{oops"), "not valid JSON"),
        (lambda folder: (folder / "metadata.json").write_text("[1]"), "must be a JSON object"),
    ],
)
def test_a_bad_run_folder_is_named_and_nothing_is_sent(
    server, token, run_folder, capsys, damage, message
):
    damage(run_folder)
    assert submit(run_folder, server, token) == BAD_INPUT
    assert message in capsys.readouterr().err
    assert Run.objects.count() == 0


def test_submit_sends_the_native_sources_beside_solution_py(server, token, run_folder, capsys):
    (run_folder / "kernel.cu").write_text("__global__ void row_kernel(float* x) {}\n")
    (run_folder / "._kernel.cu").write_bytes(b"\x00\x05")  # macOS metadata: not sent
    assert submit(run_folder, server, token, "--wait") == OK
    assert "solution.py, kernel.cu, 1 transcript file(s)" in capsys.readouterr().err
    (sidecar,) = Run.objects.get().solution.sidecar_files
    assert (sidecar.name, sidecar.code) == ("kernel.cu", (run_folder / "kernel.cu").read_text())


def test_a_sidecar_the_server_refuses_is_named_and_nothing_is_stored(
    server, token, run_folder, capsys
):
    (run_folder / "kernel.cu").write_bytes(b"\xff\xfe")
    assert submit(run_folder, server, token) == BAD_INPUT
    assert "kernel.cu is not UTF-8 text" in capsys.readouterr().err
    assert Run.objects.count() == 0


def test_a_file_given_as_the_run_folder_is_refused(server, token, run_folder, capsys):
    assert submit(run_folder / "solution.py", server, token) == BAD_INPUT
    assert "not a folder" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_an_unreadable_folder_is_refused(server, token, run_folder, capsys):
    run_folder.chmod(0)
    try:
        assert submit(run_folder, server, token) == BAD_INPUT
    finally:
        run_folder.chmod(0o755)
    assert "cannot read the folder" in capsys.readouterr().err


def test_an_unreadable_transcript_is_refused(server, token, run_folder, capsys):
    (run_folder / "transcript.jsonl").unlink()
    (run_folder / "transcript.jsonl").mkdir()
    (run_folder / "session.jsonl").symlink_to(run_folder / "missing.jsonl")
    assert submit(run_folder, server, token) == BAD_INPUT
    assert "session.jsonl: cannot read it" in capsys.readouterr().err


def test_login_stores_the_token_with_mode_0600_and_submit_uses_it(
    server, token, run_folder, isolated_config, capsys
):
    assert main(["login", "--url", server.url, "--token", token]) == OK
    assert stat.S_IMODE(isolated_config.stat().st_mode) == 0o600
    assert json.loads(isolated_config.read_text()) == {"url": server.url, "token": token}
    assert main(["submit", str(run_folder), *LABELS]) == OK
    assert Run.objects.get().submitter.username == "alice"


def test_the_environment_overrides_the_config_file(
    server, token, run_folder, monkeypatch, isolated_config
):
    main(["login", "--url", "http://127.0.0.1:9", "--token", "stale"])
    monkeypatch.setenv("ARENA_URL", server.url)
    monkeypatch.setenv("ARENA_TOKEN", token)
    assert main(["submit", str(run_folder), *LABELS]) == OK


def _claude_layout(folder: Path) -> None:
    source = SAMPLES / "claude-subagents-folder-handwritten"
    shutil.copytree(source, folder, dirs_exist_ok=True)


SAMPLE_LAYOUTS = {
    "claude-code": ("claude-code", _claude_layout, 2),
    "claude-code-print": (
        "claude-code-print",
        lambda f: shutil.copy(SAMPLES / "claude-stream-json-task-subagent.jsonl", f),
        1,
    ),
    "codex-exec": (
        "codex-cli",
        lambda f: shutil.copy(SAMPLES / "codex-exec-json-command.jsonl", f),
        1,
    ),
    "codex-rollout": (
        "codex-cli",
        lambda f: shutil.copy(SAMPLES / "codex-rollout-handwritten.jsonl", f),
        1,
    ),
    "gemini": (
        "gemini-cli",
        lambda f: shutil.copy(SAMPLES / "gemini-chat-file-ops-handwritten.json", f),
        1,
    ),
}


@pytest.mark.parametrize("layout", sorted(SAMPLE_LAYOUTS))
def test_submit_uploads_a_run_folder_of_each_sample_format(server, token, tmp_path, layout):
    harness, fill, count = SAMPLE_LAYOUTS[layout]
    folder = tmp_path / layout
    folder.mkdir()
    shutil.copy(run_folder_solution(), folder / "solution.py")
    fill(folder)
    args = ["submit", str(folder), "--problem", "softmax", "--model", "gpt-5"]
    assert main([*args, "--harness", harness, "--url", server.url, "--token", token]) == OK
    run = Run.objects.get()
    assert run.transcript_files.count() == count
    assert run.transcript_status == Run.TranscriptStatus.PARSED, run.transcript_error


def run_folder_solution() -> Path:
    return Path(__file__).resolve().parents[2] / "examples" / "softmax-run" / "solution.py"


@pytest.mark.parametrize(
    "value", [0.0, 1.234e-6, 4.59e-5, 0.000999, 0.001, 0.0109, 0.12345, 0.9996, 1.0, 0.5]
)
def test_submit_prints_a_score_as_the_run_page_writes_it(value):
    assert score_text(value) == page_score(value)
