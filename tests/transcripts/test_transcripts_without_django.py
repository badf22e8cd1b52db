"""The transcripts package stands alone: the web process imports it for choices, workers parse
and render with it, and none of that may pull Django in (a meta-path finder refuses it)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = Path(__file__).parent / "samples" / "claude-stream-json-task-subagent.jsonl"

BLOCK_DJANGO = """
import importlib.abc, sys

class NoDjango(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "django":
            raise ImportError("transcripts imported " + name)

sys.meta_path.insert(0, NoDjango())
"""

WHOLE_PACKAGE = """
import transcripts, transcripts.cli, transcripts.figures, transcripts.redact, transcripts.render
from transcripts.figures import run_figures
from transcripts.parsers import parse_files
from transcripts.redact import redact_session
from transcripts.render import render_html

session = redact_session(parse_files([sys.argv[1]]))
page = render_html(session, context={"problem": "softmax"})
print(run_figures(session).output_tokens, len(page) > 10_000, "django" in sys.modules)
sys.exit(transcripts.cli.main(["render", sys.argv[1], "-o", sys.argv[2]]))
"""

CHOICES_ONLY = """
from transcripts.parsers import format_choices
heavy = ("django", "markdown_it", "bleach", "pygments")
print(len(format_choices()), sorted(m for m in sys.modules if m.partition(".")[0] in heavy))
"""


def run_blocked(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_DJANGO + code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_transcripts_parses_renders_and_counts_with_django_blocked(tmp_path):
    out = tmp_path / "run.html"
    printed = run_blocked(WHOLE_PACKAGE, str(SAMPLE), str(out))
    assert printed.splitlines()[0] == "4795 True False"
    assert "toolu_01EMBD2Ez8pt8LWj5ovow1mU" in out.read_text(encoding="utf-8")


def test_format_choices_load_no_rendering_library():
    assert run_blocked(CHOICES_ONLY).strip() == "9 []"
