"""``arena run``: one agent CLI on one problem, in a workspace of its own, under a wall budget.

The run folder it leaves is one ``arena submit`` reads (arena_cli.runfolder)::

    RUN/solution.py (+ native sources)   the agent's final solution, copied from the workspace
    RUN/<session>.jsonl (+ subagents/)    the CLI's own session log, where the CLI writes it
    RUN/result.json                       what the launcher saw: the metadata of the run
    RUN/stdout.txt, RUN/stderr.txt        the CLI's output
    RUN/workspace/                        the problem's agent pack, where the agent worked
    RUN/home/, RUN/cache/, RUN/tmp/       the CLI's own HOME, build caches and temporary files

The outcome says why a run has no gradable solution (OUTCOMES); the infrastructure failures are
marked retryable.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from arena_cli.harnesses import HARNESSES, Harness
from arena_cli.runfolder import sidecar_files
from runners.pack_check import GPU_LOCK_ENV
from runners.solution_files import SOLUTION_NAME

# outcome -> (meaning, retryable: a failure of the infrastructure, not of the agent)
OUTCOMES = {
    "ok": ("the agent finished and left solution.py", False),
    "no_solution": ("the agent finished without writing solution.py", False),
    "timeout": ("the wall budget ran out; the CLI's process group was stopped", False),
    "incomplete_session": ("the CLI ended without finishing its session", True),
    "provider_rate_limited": ("the model provider refused with a rate limit (429)", True),
    "provider_auth": ("the model provider refused the credentials", False),
    "provider_unavailable": ("the model provider failed or could not be reached", True),
    "harness_error": ("the CLI could not start or failed on its own", True),
    "template_mutated": ("the agent changed the problem's own files in the workspace", False),
}
# Runs on one GPU share its lock file here (the caller's own cache, not a run's HOME).
DEFAULT_LOCK_DIR = Path.home() / ".cache" / "kernel-arena" / "gpu-locks"
GRACE_S = 10  # after the budget: SIGTERM to the process group, then this long before SIGKILL
# The CLIs running now, in this process (their groups are their own: a signal to the caller does
# not reach them, so whoever stops the caller stops these).
LIVE: set[subprocess.Popen] = set()
# The caller's variables a run keeps (besides the harness's provider variables): no key, token or
# cache of the caller's reaches the agent.
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "TERM", "CUDA_HOME", "LD_LIBRARY_PATH", "VIRTUAL_ENV")
_PROVIDER_ERRORS = (
    ("provider_rate_limited", re.compile(r"\b429\b|rate.?limit", re.I)),
    ("provider_auth", re.compile(r"\b40[13]\b|authenticat|api.?key|unauthori[sz]ed", re.I)),
    ("provider_unavailable", re.compile(r"\b5\d\d\b|overloaded|connection|unavailable", re.I)),
)


class LaunchError(Exception):
    """The run cannot start; the message says why."""


@dataclass
class RunResult:
    harness: str
    model: str
    effort: str
    problem: str
    budget_s: float
    outcome: str = "harness_error"
    retryable: bool = True
    cli_version: str = ""
    prompt_hash: str = ""
    wall_time_s: float = 0.0
    exit_code: int | None = None
    session_complete: bool = False
    session_id: str = ""
    native_logs: list[str] = field(default_factory=list)
    mutated: list[str] = field(default_factory=list)
    detail: str = ""
    # the CLI's own figures from its final report, where it gives them
    turns: int | None = None
    cost_usd: float | None = None
    usage: dict = field(default_factory=dict)


def run_agent(
    *,
    harness: str,
    model: str,
    problem: str,
    out: Path,
    budget_s: float,
    effort: str = "",
    cli: str | None = None,
    gpu: str | None = None,
    lock_dir: Path | None = None,
    provider: dict[str, str] | None = None,
) -> RunResult:
    """Launch the harness on the problem's pack in `out`/workspace and leave a run folder.
    The harness's provider variables come from `provider` where given (an agent worker's
    configured keys), else from the caller's environment."""
    chosen = HARNESSES.get(harness)
    if chosen is None:
        raise LaunchError(f"unknown harness {harness!r} (known: {', '.join(HARNESSES)})")
    executable = chosen.find(cli)
    if executable is None:
        where = cli or f"{chosen.binary} on PATH"
        raise LaunchError(f"{harness}: no executable CLI at {where} (see docs/launcher.md)")
    if out.exists() and any(out.iterdir()):
        raise LaunchError(f"{out}: the run folder must be new or empty")
    workspace, home = out / "workspace", out / "home"
    pack = _write_pack(problem, workspace)
    before = _digests(pack)
    prompt = (workspace / "PROMPT.md").read_text(encoding="utf-8")
    result = RunResult(harness, model, effort, problem, budget_s)
    result.prompt_hash = hashlib.sha256(prompt.encode()).hexdigest()
    env = _environment(chosen, out, gpu, lock_dir or DEFAULT_LOCK_DIR, provider)
    env |= chosen.prepare(home, env, model=model)
    result.cli_version = _version(executable, env)
    command = chosen.command(executable, prompt=prompt, model=model, effort=effort)
    started = time.monotonic()
    result.exit_code, timed_out = _launch(command, workspace, env, out, budget_s)
    result.wall_time_s = round(time.monotonic() - started, 3)
    _read_report(chosen, out / "stdout.txt", result)
    result.native_logs = _collect(chosen.native_logs(home), out)
    after = _digests(pack)
    result.mutated = sorted(name for name in before if before[name] != after[name])
    _copy_solution(workspace, out)
    result.outcome = _outcome(result, timed_out, (out / "solution.py").is_file(), out)
    result.retryable = OUTCOMES[result.outcome][1]
    (out / "result.json").write_text(json.dumps(asdict(result), indent=2) + "\n")
    return result


def _write_pack(problem: str, workspace: Path) -> list[Path]:
    from runners.pack import PackError, write_pack
    from runners.problem import ProblemError, load_problem

    try:
        return write_pack(load_problem(problem), workspace)
    except (ProblemError, PackError) as error:
        raise LaunchError(str(error)) from error


def _digests(paths: list[Path]) -> dict[str, str | None]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        for path in paths
    }


def _environment(
    harness: Harness,
    out: Path,
    gpu: str | None,
    lock_dir: Path,
    provider: dict[str, str] | None = None,
) -> dict[str, str]:
    """The CLI's environment: the caller's PATH and locale, the harness's provider variables,
    a HOME, caches and temporary folder of the run's own, and with a GPU, the lock its pack's
    check takes (runs sharing the GPU check one at a time)."""
    source = os.environ if provider is None else provider
    env = {name: os.environ[name] for name in KEPT_ENV if name in os.environ}
    env |= {name: source[name] for name in harness.provider_env if name in source}
    folders = {
        "HOME": out / "home",
        "TMPDIR": out / "tmp",
        "XDG_CACHE_HOME": out / "cache",
        "TORCH_EXTENSIONS_DIR": out / "cache" / "torch_extensions",
        "TRITON_CACHE_DIR": out / "cache" / "triton",
        "CUDA_CACHE_PATH": out / "cache" / "nv",
    }
    for name, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
        lock_dir.mkdir(parents=True, exist_ok=True)
        env[GPU_LOCK_ENV] = str(lock_dir / f"gpu-{gpu}.lock")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the pack's files stay as written
    return env


def _version(executable: str, env: dict[str, str]) -> str:
    try:
        done = subprocess.run(
            [executable, "--version"], env=env, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip().splitlines()[0][:100] if done.stdout.strip() else ""


def _launch(
    command: list[str], workspace: Path, env: dict[str, str], out: Path, budget_s: float
) -> tuple[int | None, bool]:
    """Run the CLI in its own process group; past the budget, stop the whole group."""
    with (out / "stdout.txt").open("wb") as stdout, (out / "stderr.txt").open("wb") as stderr:
        try:
            process = subprocess.Popen(
                command,
                cwd=workspace,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        except OSError as error:
            stderr.write(f"{command[0]}: {error}\n".encode())
            return None, False
        LIVE.add(process)
        try:
            return process.wait(timeout=budget_s), False
        except subprocess.TimeoutExpired:
            _stop_group(process)
            return process.returncode, True
        finally:
            LIVE.discard(process)


def stop_all() -> None:
    """Stop every CLI still running, with its process group (a sweep told to stop)."""
    for process in list(LIVE):
        _stop_group(process)


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the group, GRACE_S to end, then SIGKILL to whatever of it is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        if sig == signal.SIGTERM:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=GRACE_S)
    process.wait()


def _read_report(harness: Harness, stdout: Path, result: RunResult) -> None:
    """The CLI's JSON output, one object per line: whether the session finished, its id, the
    error it ended with (in `detail`), and its turns, cost and usage."""
    events = []
    for line in stdout.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    report = harness.report(events)
    result.session_id, result.session_complete = report.session_id, report.complete
    result.detail, result.turns = report.error, report.turns
    result.cost_usd, result.usage = report.cost_usd, report.usage


def _collect(logs: list[tuple[str, Path]], out: Path) -> list[str]:
    names = []
    for name, path in logs:
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        names.append(name)
    return names


def _copy_solution(workspace: Path, out: Path) -> None:
    """solution.py and the native sources beside it, as `arena submit` finds them
    (arena_cli.runfolder.sidecar_files); a symlink is not the agent's file and is left."""
    for path in [workspace / SOLUTION_NAME, *sidecar_files(workspace)]:
        if path.is_file() and not path.is_symlink():
            shutil.copyfile(path, out / path.name)


def _outcome(result: RunResult, timed_out: bool, has_solution: bool, out: Path) -> str:
    if result.mutated:
        return "template_mutated"
    if timed_out:
        return "timeout"
    if result.exit_code is None:
        return "harness_error"
    errors = result.detail + " " + (out / "stderr.txt").read_text(errors="replace")[-2000:]
    if result.detail or (result.exit_code != 0 and not result.session_complete):
        for outcome, pattern in _PROVIDER_ERRORS:
            if pattern.search(errors):
                return outcome
    if not result.session_complete:
        return "incomplete_session"
    if result.exit_code != 0:
        return "harness_error"
    return "ok" if has_solution else "no_solution"


def parse_budget(text: str) -> float:
    """`45m`, `90s`, `1h30m` or a number of seconds."""
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text.strip())
    if text.strip().replace(".", "", 1).isdigit():
        seconds = float(text)
    elif match and any(match.groups()):
        hours, minutes, secs = (int(g or 0) for g in match.groups())
        seconds = hours * 3600 + minutes * 60 + secs
    else:
        raise ValueError(f"budget {text!r}: write 45m, 90s, 1h30m or seconds")
    if seconds <= 0:
        raise ValueError(f"budget {text!r}: must be more than zero")
    return seconds


def describe(result: RunResult, out: Path) -> str:
    meaning, retryable = OUTCOMES[result.outcome]
    lines = [
        f"{result.outcome}: {meaning}" + (" (retryable)" if retryable else ""),
        f"  {result.harness} {result.cli_version or '(version unknown)'}, model {result.model}, "
        f"{result.wall_time_s:.1f} s of {result.budget_s:.0f} s, exit {result.exit_code}",
        f"  run folder {out}: {', '.join(result.native_logs) or 'no session log'}",
    ]
    if result.mutated:
        lines.append(f"  changed pack files: {', '.join(result.mutated)}")
    if result.detail:
        lines.append(f"  {result.detail}")
    return "\n".join(lines)
