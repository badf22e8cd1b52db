import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import sys
import runners, runners.schema, runners.hardware, runners.problem, runners.cli
from runners.cli import main
main([sys.argv[1], "--json"])
heavy = sorted(m for m in ("torch", "django", "numpy", "triton") if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


def listing_without_heavy_imports(command: str) -> list[dict]:
    done = subprocess.run(
        [sys.executable, "-c", CHECK, command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    listing, heavy = done.stdout.rsplit("HEAVY=", 1)
    assert heavy.strip() == ""
    return json.loads(listing)


def test_engine_lists_problems_without_django_or_torch():
    slugs = {info["slug"] for info in listing_without_heavy_imports("problems")}
    assert {"rmsnorm", "softmax", "row_sum"} <= slugs


def test_engine_lists_the_hardware_table_without_django_or_torch():
    rows = {row["slug"]: row for row in listing_without_heavy_imports("hardware")}
    assert {"h100-sxm", "h200", "cpu"} <= rows.keys()
    cpu = rows["cpu"]
    assert cpu.keys() == {
        "slug",
        "name",
        "bandwidth_gbps",
        "peak_tflops",
        "l2_bytes",
        "sources",
        "device",
        "measured",
    }
    assert (cpu["device"], cpu["measured"]) == ("cpu", False)
    assert cpu["peak_tflops"]["fp32"] > 0 and cpu["bandwidth_gbps"] > 0
    assert rows["h100-sxm"]["peak_tflops"]["bf16"] == 989.4


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
            "peak_dtype",
            "cpu_capable",
            "statement",
            "visible_shapes",
        } <= info.keys()
        assert info["hidden_count"] >= 4
        assert len(info["visible_shapes"]) == info["visible_count"]
        assert "{{visible_shapes}}" not in info["statement"]
