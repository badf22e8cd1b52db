"""What the launcher's tests share: the CLIs `make agents` installs, the provider variables a
user's shell would hold, a run against the scripted server, the solutions a script writes, and
what a run folder that grades ok holds."""

import os
import sys
from pathlib import Path

import pytest

from arena_cli.launch import run_agent
from arena_cli.runfolder import read_run_folder
from runners.evaluate import evaluate
from runners.schema import Verdict
from tests.launcher.model_server import ScriptedModel  # importable from tests/workers too
from transcripts.lineage import rebuild_lineage
from transcripts.model import Kind
from transcripts.parsers import parse_files

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "npm" / "node_modules" / ".bin"
HONEST = (ROOT / "tests" / "runners" / "solutions" / "row_sum" / "honest.py").read_text()
BROKEN = HONEST.replace("tl.sum(partial, axis=0)", "tl.max(partial, axis=0)")
CHECK = f"{sys.executable} check.py --device cpu"


def installed_cli(name: str, variable: str) -> str:
    """The CLI's executable: $variable, else the one `make agents` installed; a missing one
    fails the test (CI installs it)."""
    path = os.environ.get(variable, str(BIN / name))
    if not Path(path).is_file():
        pytest.fail(f"no {name} CLI at {path}: `make agents` installs it (or set {variable})")
    return path


class provider_env:
    """Variables for the run, as a user's shell would hold them, restored after."""

    def __init__(self, **values: str):
        self.values = values

    def __enter__(self):
        self.saved = {name: os.environ.get(name) for name in self.values}
        os.environ.update(self.values)

    def __exit__(self, *exc_info):
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def fix_and_check(workspace: Path, *, read, write, shell) -> list[list[dict]]:
    """The agent the launcher tests play, in one CLI's tools (`read(path)`, `write(path,
    content)`, `shell(command)`: a tool call each): read the prompt, write a wrong solution, run
    the local check, fix it, check again, stop."""
    return [
        [{"text": "Reading the task."}, read(workspace / "PROMPT.md")],
        [write(workspace / "solution.py", BROKEN)],
        [shell(CHECK)],
        [
            {"text": "The check fails: max instead of sum."},
            write(workspace / "solution.py", HONEST),
        ],
        [shell(CHECK)],
        [{"text": "solution.py passes the check."}],
    ]


def launch_scripted(script, tmp_path: Path, *, keys, budget_s: float = 120.0, **run_args):
    """`arena run` on row_sum into tmp_path/run, against a scripted server playing
    `script(workspace)`, with the provider variables `keys(server url)` in the environment;
    `run_args` name the harness, model and CLI. The result, the run folder and the server."""
    out = tmp_path / "run"
    with ScriptedModel(script(out / "workspace")) as model, provider_env(**keys(model.url)):
        result = run_agent(problem="row_sum", out=out, budget_s=budget_s, **run_args)
    return result, out, model


def assert_fix_and_check_session(out: Path, log: str, tools: list[str]):
    """The native log of a `fix_and_check` run, parsed: exactly the script's five tool calls
    (`tools`, in the CLI's names), the first check the one failed result, and the two versions
    of solution.py rebuilt in order; the session."""
    session = parse_files([out / log])
    calls = [e for e in session.events if e.kind == Kind.TOOL_CALL]
    assert [e.tool_name for e in calls] == tools
    results = [e for e in session.events if e.kind == Kind.TOOL_RESULT]
    assert [r.is_error for r in results] == [False, False, True, False, False]
    assert [v.content for v in rebuild_lineage(session).versions] == [BROKEN, HONEST]
    assert (out / "solution.py").read_text() == HONEST
    return session


def assert_submittable_and_grades_ok(out: Path, log: str) -> None:
    """`arena submit` finds the run's one native log and its metadata, and the solution it
    left grades ok on the CPU."""
    folder = read_run_folder(out)
    assert [name for name, _ in folder.transcripts] == [log] and folder.metadata
    graded = evaluate("row_sum", out / "solution.py", device="cpu")
    assert graded.verdict == Verdict.OK, graded.reason
