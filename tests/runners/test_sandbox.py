"""The sandbox on its own (a probe script, no torch) and under runaway candidates."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engine_support import RUNTIME, grade_tiny, run_bounded

from runners import sandbox
from runners.schema import Verdict
from runners.workers import Worker, WorkerTimeout

pytestmark = pytest.mark.skipif(
    not (sandbox.probe().namespaces and sandbox.probe().setpriv),
    reason="needs root with unshare, setpriv and prlimit",
)

PROBE = """
import json, os, socket, sys
from pathlib import Path
hidden, secret_file = sys.argv[1], sys.argv[2]
def readable(path):
    try:
        Path(path).read_bytes()
        return True
    except OSError:
        return False
def connects():
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=2).close()
        return True
    except OSError:
        return False
environs = b"".join(p.read_bytes() for p in Path("/proc").glob("*/environ") if readable(p))
print(json.dumps({
    "uid": os.getuid(),
    "env_secret": "ARENA_TEST_SECRET" in os.environ,
    "proc_secret": b"ARENA_TEST_SECRET" in environs,
    "pids": sorted(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()),
    "hidden_readable": readable(hidden),
    "secret_file_readable": readable(secret_file),
    "network": connects(),
}))
"""


def run_probe(tmp_path: Path, monkeypatch) -> dict:
    monkeypatch.setenv("ARENA_TEST_SECRET", "s3cr3t")
    masked = tmp_path / "problem"
    masked.mkdir()
    (masked / "hidden.yaml").write_text("shapes: []\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("root only")
    secret.chmod(0o600)
    inner = [sys.executable, "-I", "-c", PROBE, str(masked / "hidden.yaml"), str(secret)]
    uid = sandbox.sandbox_uid()
    argv, isolation, preexec = sandbox.candidate_command(
        inner, limits=sandbox.Limits(), uid=uid, masked=[masked]
    )
    env = sandbox.child_env(tmp_path, device="cpu")
    done = subprocess.run(
        argv,
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=preexec,
        check=True,
    )
    return json.loads(done.stdout) | {"isolation": isolation, "expected_uid": uid}


def test_probe_runs_as_another_uid_without_secrets_or_network(tmp_path, monkeypatch):
    seen = run_probe(tmp_path, monkeypatch)
    assert seen["uid"] == seen["expected_uid"] != 0
    assert not seen["env_secret"] and not seen["proc_secret"]
    assert not seen["network"]
    assert not seen["hidden_readable"] and not seen["secret_file_readable"]
    assert len(seen["pids"]) <= 3  # init, the probe, nothing of the host
    assert seen["isolation"]["namespaces"] == ["pid", "mount", "net", "ipc", "uts"]


def uid_processes(uid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:
            continue
        uids = next((line.split()[1:] for line in lines if line.startswith("Uid:")), [])
        if str(uid) in uids:
            found.append(int(status.parent.name))
    return found


def test_wall_clock_kill_takes_a_detached_grandchild_with_it(tmp_path):
    script = "import subprocess, time; subprocess.Popen(['setsid', 'sleep', '300']); time.sleep(99)"
    uid = sandbox.sandbox_uid()
    argv, _, preexec = sandbox.candidate_command(
        [sys.executable, "-I", "-c", script], limits=sandbox.Limits(), uid=uid, masked=[]
    )
    worker = Worker(
        argv,
        env=sandbox.child_env(tmp_path, device="cpu"),
        cwd=tmp_path,
        log_path=tmp_path / "log",
        preexec_fn=preexec,
    )
    deadline = time.monotonic() + 20
    while len(uid_processes(uid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(uid_processes(uid)) >= 2
    with pytest.raises(WorkerTimeout):
        worker.request({"op": "never"}, timeout_s=0.5)
    time.sleep(0.5)
    assert uid_processes(uid) == []


def test_infinite_loop_ends_in_timeout():
    result = grade_tiny("infinite_loop")
    assert result.verdict == Verdict.TIMEOUT


def test_sleeping_candidate_ends_in_timeout():
    started = time.monotonic()
    result = grade_tiny("sleeps")
    assert result.verdict == Verdict.TIMEOUT
    assert time.monotonic() - started < 120


def test_memory_hog_ends_in_resource_limit():
    result = grade_tiny("memory_hog")
    assert result.verdict == Verdict.RESOURCE_LIMIT, result.reason


def test_process_spawner_ends_in_resource_limit_and_leaves_no_process():
    result = grade_tiny("process_spawner", static=False)
    assert result.verdict == Verdict.RESOURCE_LIMIT, result.reason
    assert uid_processes(result.isolation["uid"]) == []


@pytest.mark.parametrize("solution", ["aborts", "segfaults"])
def test_crashing_candidate_ends_in_crashed_while_the_parent_survives(solution):
    result = run_bounded(grade_tiny, solution, static=False)
    assert result.verdict == Verdict.CRASHED
    assert "SIGABRT" in result.reason or "SIGSEGV" in result.reason
    assert (RUNTIME / f"{solution}.py").is_file()


def test_a_request_sent_before_the_last_reply_was_taken_is_the_engines_error(tmp_path):
    """The child answers in order: a second request before the first reply is taken would have
    the first reply read as forged (the child killed, the candidate blamed)."""
    script = "import sys, time; sys.stdin.readline(); time.sleep(99)"
    worker = Worker(
        [sys.executable, "-I", "-c", script],
        env=sandbox.child_env(tmp_path, device="cpu"),
        cwd=tmp_path,
        log_path=tmp_path / "log",
    )
    try:
        ticket = worker.send({"op": "first"})
        with pytest.raises(RuntimeError, match="before the last one's reply was taken"):
            worker.send({"op": "second"})
        with pytest.raises(WorkerTimeout):
            worker.receive(ticket, timeout_s=0.3)
        assert worker._waiting is None  # taken, if as a timeout: the next request may go
    finally:
        worker.close()
