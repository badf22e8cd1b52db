"""``arena problems | pack | evaluate | render``, and the console script itself."""

import subprocess
import sys
from pathlib import Path

import pytest

from arena_cli.exits import BAD_INPUT, CANDIDATE_FAILED, OK, UNREACHABLE
from arena_cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "softmax-run"
ARENA = Path(sys.executable).with_name("arena")


@pytest.mark.django_db(transaction=True)
def test_problems_lists_the_servers_problems(server, capsys):
    assert main(["problems", "--url", server.url]) == OK
    assert capsys.readouterr().out.startswith("softmax ")


def test_problems_without_a_server_says_so(capsys):
    assert main(["problems", "--url", "http://127.0.0.1:9", "--retries", "0"]) == UNREACHABLE
    assert "no answer from http://127.0.0.1:9 after 1 tries" in capsys.readouterr().err


def test_problems_local_lists_the_engines_deck(capsys):
    assert main(["problems", "--local"]) == OK
    assert "Row softmax (fp32)" in capsys.readouterr().out


def test_pack_writes_the_agent_workspace(tmp_path, capsys):
    assert main(["pack", "softmax", str(tmp_path / "ws")]) == OK
    written = sorted(p.name for p in (tmp_path / "ws").iterdir())
    assert written == [
        "PROMPT.md",
        "check.py",
        "check_compare.py",
        "reference.py",
        "shapes.json",
        "starter.py",
    ]


def test_pack_refuses_an_unknown_problem_and_a_full_folder(tmp_path, capsys):
    assert main(["pack", "no-such-problem", str(tmp_path / "a")]) == BAD_INPUT
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("x")
    assert main(["pack", "softmax", str(tmp_path / "b")]) == BAD_INPUT
    assert "needs a new or empty directory" in capsys.readouterr().err


def test_evaluate_grades_the_example_solution_on_the_cpu(tmp_path, capsys):
    out = tmp_path / "result.json"
    args = ["evaluate", "--problem", "softmax", "--solution", str(EXAMPLE / "solution.py")]
    assert main([*args, "--device", "cpu", "--json", str(out)]) == OK
    assert "softmax (cpu): ok" in capsys.readouterr().out
    assert out.exists()


def test_evaluate_says_when_the_candidate_fails_or_the_file_is_missing(tmp_path, capsys):
    wrong = tmp_path / "solution.py"
    wrong.write_text("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n")
    args = ["evaluate", "--problem", "softmax", "--device", "cpu", "--solution"]
    assert main([*args, str(wrong)]) == CANDIDATE_FAILED
    assert main([*args, str(tmp_path / "missing.py")]) == BAD_INPUT
    assert "missing.py: no such file" in capsys.readouterr().err


def test_render_writes_the_transcript_page(tmp_path, capsys):
    page = tmp_path / "out.html"
    assert main(["render", str(EXAMPLE / "transcript.jsonl"), "-o", str(page)]) == OK
    assert "softmax" in page.read_text()
    assert main(["render", str(tmp_path / "missing.jsonl"), "-o", str(page)]) == BAD_INPUT


def test_the_arena_script_is_installed_and_imports_no_django():
    shown = subprocess.run([str(ARENA), "--help"], capture_output=True, text=True, check=True)
    assert "submit" in shown.stdout
    probe = (
        "import sys, arena_cli.main; print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('django', 'runners', 'transcripts', 'submissions')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]"
