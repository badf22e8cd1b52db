import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import sys
import runners, runners.schema, runners.hardware, runners.problem, runners.cli
from runners.cli import main
main(["problems", "--json"])
heavy = sorted(m for m in ("torch", "django", "numpy", "triton") if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


def test_engine_lists_problems_without_django_or_torch():
    done = subprocess.run(
        [sys.executable, "-c", CHECK],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    listing, heavy = done.stdout.rsplit("HEAVY=", 1)
    assert heavy.strip() == ""
    slugs = {info["slug"] for info in json.loads(listing)}
    assert {"rmsnorm", "softmax", "row_sum"} <= slugs


def test_problems_command_prints_problem_info_fields():
    done = subprocess.run(
        [sys.executable, "-m", "runners", "problems", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    for info in json.loads(done.stdout):
        assert {
            "slug",
            "title",
            "category",
            "regime",
            "version",
            "visible_count",
            "hidden_count",
        } <= info.keys()
        assert info["hidden_count"] >= 4
