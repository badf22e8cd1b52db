"""The demo's example runs' transcripts, recorded with the real agent CLIs.

Each example run of `manage.py demo_runs` (an honest and a failing solution per CPU-capable
problem) gets the transcript of a real session that wrote it: `arena run` launches Claude Code
or Codex (alternately, as `make agents` installs them) on the problem's pack against a scripted
model that reads PROMPT.md and writes the example's solution.py; the session log the CLI wrote
is the run's transcript. The model is scripted, and the runs say so (their model is "Scripted
model (demo)"). Run from the repository root after `make agents`:

    python bench/demo_transcripts.py

Writes submissions/demo/transcripts.tar.gz: per example `<problem>-<kind>/<harness>/` with the
session file(s) of its run folder; `demo_runs` attaches them to the run, under that harness.
"""

from __future__ import annotations

import io
import os
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "submissions" / "demo" / "transcripts.tar.gz"
SESSION_SUFFIXES = (".jsonl",)


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena_web.settings")
    import django

    django.setup()
    from submissions.management.commands.demo_runs import examples, harness_for

    scratch = Path(tempfile.mkdtemp(prefix="arena-demo-transcripts-"))
    with tarfile.open(OUT, "w:gz") as bundle:
        for index, (slug, kind, code) in enumerate(examples()):
            harness = harness_for(index)
            out = scratch / f"{slug}-{kind}"
            sessions = record(harness, slug, code, out)
            for path in sessions:
                data = path.read_bytes()
                member = tarfile.TarInfo(f"{slug}-{kind}/{harness}/{path.name}")
                member.size, member.mtime = len(data), 0
                bundle.addfile(member, io.BytesIO(data))
            print(f"{slug:20} {kind:8} {harness:12} {[p.name for p in sessions]}")
    print(OUT, OUT.stat().st_size, "bytes")
    return 0


def record(harness: str, problem: str, code: str, out: Path) -> list[Path]:
    """One real CLI session on `problem` whose scripted model writes `code`; its session logs."""
    from arena_cli.launch import run_agent
    from tests.launcher.launcher_support import BIN, provider_env
    from tests.launcher.model_server import ScriptedModel

    workspace = out / "workspace"
    if harness == "claude-code":
        keys = {"ANTHROPIC_API_KEY": "sk-scripted"}
        base, cli = "ANTHROPIC_BASE_URL", BIN / "claude"
        script = [
            [{"text": "Reading the task."}, _claude("Read", file_path=workspace / "PROMPT.md")],
            [_claude("Write", file_path=workspace / "solution.py", content=code)],
            [{"text": "solution.py is written."}],
        ]
    else:
        keys = {"OPENAI_API_KEY": "sk-scripted"}
        base, cli = "OPENAI_BASE_URL", BIN / "codex"
        write = f"cat > {workspace / 'solution.py'} <<'ARENA_EOF'\n{code}ARENA_EOF"
        script = [
            [{"tool": "exec_command", "input": {"cmd": "cat PROMPT.md"}}],
            [{"tool": "exec_command", "input": {"cmd": write}}],
            [{"text": "solution.py is written."}],
        ]
    with ScriptedModel(script) as model:
        url = model.url if harness == "claude-code" else f"{model.url}/v1"
        with provider_env(**keys, **{base: url}):
            result = run_agent(
                harness=harness, model="scripted-demo", problem=problem, out=out,
                budget_s=120, cli=str(cli),
            )  # fmt: skip
    if result.outcome != "ok":
        raise SystemExit(f"{problem} with {harness}: {result.outcome} {result.detail}")
    return sorted(p for p in out.iterdir() if p.suffix in SESSION_SUFFIXES)


def _claude(tool: str, **arguments) -> dict:
    return {"tool": tool, "input": {name: str(value) for name, value in arguments.items()}}


if __name__ == "__main__":
    raise SystemExit(main())
