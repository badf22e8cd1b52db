import importlib.util
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from runners import pack, pack_check
from runners.pack import PackError, problem_info, render_prompt, write_pack
from runners.problem import SHAPES_PLACEHOLDER, load_problem

SOLUTIONS = Path(__file__).resolve().parent / "solutions"
DECK = ("rmsnorm", "softmax", "row_sum")


def run_check(pack: Path, solution: Path) -> subprocess.CompletedProcess:
    """check.py on CPU: the smoke shapes under the Triton interpreter."""
    command = [sys.executable, "check.py", "--device", "cpu", "--solution", str(solution)]
    return subprocess.run(command, cwd=pack, capture_output=True, text=True, timeout=120)


def test_pack_holds_the_workspace_files(tmp_path):
    written = write_pack(load_problem("softmax"), tmp_path / "pack")
    names = ["PROMPT.md", "check.py", "reference.py", "shapes.json", "starter.py"]
    assert [p.name for p in written] == names
    assert sorted(p.name for p in (tmp_path / "pack").iterdir()) == names


def test_pack_without_a_starter_has_none(tmp_path):
    written = write_pack(load_problem("rmsnorm"), tmp_path / "pack")
    assert "starter.py" not in [p.name for p in written]


def test_prompt_lists_every_visible_shape_as_a_table_row():
    problem = load_problem("softmax")
    prompt = render_prompt(problem)
    assert SHAPES_PLACEHOLDER not in prompt
    assert "| shape | rows | cols |" in prompt
    for index, shape in enumerate(problem.visible):
        assert f"| {index} | {shape['rows']} | {shape['cols']} |" in prompt


def test_shapes_json_carries_visible_shapes_seeds_and_tolerances(tmp_path):
    problem = load_problem("row_sum")
    write_pack(problem, tmp_path / "pack")
    document = json.loads((tmp_path / "pack" / "shapes.json").read_text())
    assert document["visible"] == problem.visible
    assert document["smoke"] == problem.smoke
    assert document["seeds"] == problem.seeds
    assert document["outputs"] == problem.outputs
    assert document["version"] == problem.version


def hidden_values(problem) -> set[int]:
    """Hidden parameter values and seeds that no visible or smoke shape shares."""
    shown = {v for shape in problem.visible + problem.smoke for v in shape.values()}
    hidden = {v for shape in problem.hidden for v in shape.values()}
    return {v for v in hidden - shown if v >= 100} | set(problem.hidden_seeds)


@pytest.mark.parametrize("slug", DECK)
def test_pack_reveals_nothing_held_out(tmp_path, slug):
    problem = load_problem(slug)
    write_pack(problem, tmp_path / "pack")
    text = "\n".join(p.read_text() for p in (tmp_path / "pack").iterdir())
    document = json.loads((tmp_path / "pack" / "shapes.json").read_text())
    assert not any(shape in document["visible"] + document["smoke"] for shape in problem.hidden)
    assert not [v for v in hidden_values(problem) if re.search(rf"\b{v}\b", text)]
    for line in (problem.path / "hidden.yaml").read_text().splitlines():
        assert line.strip() not in text
    assert "hidden.yaml" not in text
    assert not (tmp_path / "pack" / "hidden.yaml").exists()


@pytest.mark.parametrize("slug", DECK)
def test_problem_listing_carries_the_packs_statement_and_only_visible_shapes(tmp_path, slug):
    problem = load_problem(slug)
    write_pack(problem, tmp_path / "pack")
    info = problem_info(problem)
    assert info.statement == (tmp_path / "pack" / "PROMPT.md").read_text(encoding="utf-8")
    assert info.visible_shapes == problem.visible
    assert not any(shape in info.visible_shapes for shape in problem.hidden)
    listed = json.dumps(info.to_dict())
    assert not [v for v in hidden_values(problem) if re.search(rf"\b{v}\b", listed)]
    assert (info.peak_dtype, info.cpu_capable) == (problem.peak_dtype, problem.cpu_capable)


def test_pack_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "solution.py").write_text("# mine\n")
    with pytest.raises(PackError, match="new or empty directory"):
        write_pack(load_problem("softmax"), tmp_path / "pack")
    assert (tmp_path / "pack" / "solution.py").read_text() == "# mine\n"


def test_pack_accepts_an_existing_empty_directory(tmp_path):
    (tmp_path / "pack").mkdir()
    assert write_pack(load_problem("softmax"), tmp_path / "pack")


@pytest.mark.parametrize(
    ("slug", "solution"),
    [
        ("rmsnorm", SOLUTIONS / "rmsnorm" / "honest.py"),
        ("softmax", SOLUTIONS / "softmax" / "honest.py"),
        ("softmax", Path("starter.py")),
        ("row_sum", SOLUTIONS / "row_sum" / "honest.py"),
        ("row_sum", SOLUTIONS / "row_sum" / "hardcoded.py"),
    ],
    ids=lambda v: v if isinstance(v, str) else f"{v.parent.name}/{v.name}",
)
def test_check_script_passes_honest_solutions_under_the_interpreter(tmp_path, slug, solution):
    problem = load_problem(slug)
    write_pack(problem, tmp_path / "pack")
    result = run_check(tmp_path / "pack", solution)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "PASS"
    assert result.stdout.count(": ok") == len(problem.smoke) * len(problem.seeds)


def test_check_script_fails_the_hardcoded_solution_off_its_shapes(tmp_path):
    write_pack(load_problem("row_sum"), tmp_path / "pack")
    shapes = tmp_path / "pack" / "shapes.json"
    document = json.loads(shapes.read_text())
    document["smoke"] = [{"rows": 5, "cols": 1037}]
    shapes.write_text(json.dumps(document))
    result = run_check(tmp_path / "pack", SOLUTIONS / "row_sum" / "hardcoded.py")
    assert result.returncode == 1
    assert "elements off" in result.stdout and result.stdout.splitlines()[-1].startswith("FAIL")


def test_check_script_reports_a_crashing_solution():
    import torch

    problem = load_problem("softmax")
    spec = importlib.util.spec_from_file_location("softmax_ref", problem.path / "reference.py")
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    broken = SimpleNamespace(ModelNew=torch.nn.Module)
    config = pack.shapes_document(problem)
    reason = pack_check.check_case(
        torch, reference, broken, {"rows": 2, "cols": 3}, 0, "cpu", config
    )
    assert reason.startswith("error: NotImplementedError")


def test_check_script_flags_wrong_dtype_and_zeros():
    import torch

    want = {"out": torch.ones(3)}
    tolerance = {"out": {"atol": 1e-5, "rtol": 1e-5}}
    assert "dtype" in pack_check.compare(torch, want, {"out": torch.ones(3).half()}, tolerance)
    assert "all zeros" in pack_check.compare(torch, want, {"out": torch.zeros(3)}, tolerance)
    assert "NaN" in pack_check.compare(torch, want, {"out": torch.full((3,), math.nan)}, tolerance)
    assert pack_check.compare(torch, want, {"out": torch.ones(3) + 1e-6}, tolerance) is None
