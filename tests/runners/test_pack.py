import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from runners import pack_check
from runners.oracle import Oracle, grade_inputs
from runners.pack import PackError, problem_info, render_prompt, shapes_document, write_pack
from runners.problem import BUILT_IN_DISTRIBUTIONS, SHAPES_PLACEHOLDER, list_problems, load_problem

HERE = Path(__file__).resolve().parent
SOLUTIONS = HERE / "solutions"
SELECT = HERE / "problems" / "tiny_select"
DECK = ("rmsnorm", "softmax", "row_sum")
# check.py as an agent runs it, where the engine is not installed: `runners` cannot be imported.
WITHOUT_ENGINE = (
    "import runpy, sys; sys.modules['runners'] = None; sys.argv[0] = 'check.py'; "
    "runpy.run_path('check.py', run_name='__main__')"
)


def run_check(pack: Path, solution: Path) -> subprocess.CompletedProcess:
    """check.py on CPU: the smoke shapes under the Triton interpreter."""
    command = [sys.executable, "-c", WITHOUT_ENGINE, "--device", "cpu", "--solution", str(solution)]
    return subprocess.run(command, cwd=pack, capture_output=True, text=True, timeout=180)


def failed_distributions(result: subprocess.CompletedProcess) -> set[str]:
    """The distributions of the input sets check.py reported wrong ("... seed 7 large_a: why")."""
    lines = [line for line in result.stdout.splitlines() if line.startswith("shape ")]
    return {line.split(": ", 1)[0].split()[-1] for line in lines if not line.endswith(": ok")}


def test_pack_holds_the_workspace_files(tmp_path):
    written = write_pack(load_problem("softmax"), tmp_path / "pack")
    names = [
        "PROMPT.md",
        "check.py",
        "check_compare.py",
        "reference.py",
        "shapes.json",
        "starter.py",
    ]
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


def test_shapes_json_carries_each_seeds_distribution_its_cases_tolerances_and_buffers(tmp_path):
    problem = load_problem(SELECT)
    write_pack(problem, tmp_path / "pack")
    document = json.loads((tmp_path / "pack" / "shapes.json").read_text())
    assert document["distributions"] == ["normal", "large_x", "ragged"]
    assert document["cases"] == {
        "large_x": {"scale": {"0": 64.0}, "generator": None},
        "ragged": {"scale": {}, "generator": "ragged_inputs"},
    }
    assert document["tolerances"] == {d: problem.tolerance_for(d) for d in problem.distributions}
    assert document["tolerances"]["large_x"][2] == {"atol": 1e-3, "rtol": 1e-5}
    assert document["perturb_buffers"] == ["scale"]


def test_shapes_json_leaves_out_a_distribution_no_visible_seed_draws():
    problem = load_problem("topk")  # four distributions, three seeds
    document = shapes_document(problem)
    assert document["distributions"] == list(problem.distributions[:3])
    assert "offset" not in document["tolerances"]


def test_the_pack_holds_the_engines_comparison_and_imports_only_torch_and_the_stdlib(tmp_path):
    write_pack(load_problem("topk"), tmp_path / "pack")
    packed = tmp_path / "pack" / "check_compare.py"
    assert packed.read_bytes() == (HERE.parents[1] / "runners" / "compare.py").read_bytes()
    for script in ("check.py", "check_compare.py"):
        tree = ast.parse((tmp_path / "pack" / script).read_text())
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        tops = {name.split(".")[0] for name in imported if name}
        assert tops - set(sys.stdlib_module_names) == {"torch"}, script


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
        ("topk", SOLUTIONS / "topk" / "ties_reversed.py"),
        ("fp8_gemm", SOLUTIONS / "fp8_gemm" / "honest.py"),
        ("moe_swiglu", SOLUTIONS / "moe_swiglu" / "honest.py"),
        (SELECT, SOLUTIONS / "tiny_select" / "honest.py"),
    ],
    ids=lambda v: v if isinstance(v, str) else f"{v.parent.name}/{v.name}",
)
def test_check_script_passes_honest_solutions_under_the_interpreter(tmp_path, slug, solution):
    """topk's control orders ties its own way; tiny_select's too, and its buffer is perturbed."""
    problem = load_problem(slug)
    write_pack(problem, tmp_path / "pack")
    result = run_check(tmp_path / "pack", solution)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "PASS"
    assert result.stdout.count(": ok") == len(problem.smoke) * len(problem.seeds)
    for distribution in shapes_document(problem)["distributions"]:
        assert f" {distribution}: ok" in result.stdout


# fp8_gemm with a's values limited to +-24: right on normal, offset and uniform draws (|a| under
# 14 + 4), wrong on large_a (a x32), as a kernel whose intermediates lose range would be.
RANGE_LIMITED_FP8 = """
import torch


class ModelNew(torch.nn.Module):
    def forward(self, a, b, a_scale, b_scale):
        a = a.float().clamp(-24.0, 24.0)
        return ((a @ b.float().T) * a_scale * b_scale).to(torch.bfloat16)
"""


@pytest.mark.parametrize(
    ("slug", "solution", "failing"),
    [
        ("topk", SOLUTIONS / "topk" / "lower_precision.py", None),
        ("fp8_gemm", "range_limited.py", {"large_a"}),
        ("moe_swiglu", SOLUTIONS / "moe_swiglu" / "balanced.py", None),
        (SELECT, SOLUTIONS / "tiny_select" / "ignores_buffer.py", {"normal", "large_x", "ragged"}),
        (SELECT, SOLUTIONS / "tiny_select" / "normal_only.py", {"large_x"}),
        (SELECT, SOLUTIONS / "tiny_select" / "balanced.py", {"ragged"}),
    ],
    ids=[
        "topk-lower_precision",
        "fp8_gemm-range_limited",
        "moe_swiglu-balanced",
        "tiny_select-ignores_buffer",
        "tiny_select-normal_only",
        "tiny_select-balanced",
    ],
)
def test_check_script_fails_wrong_solutions_on_the_input_sets_grading_fails_them(
    tmp_path, slug, solution, failing
):
    """tiny_select's controls are each wrong only through one feature (a perturbed buffer, a
    scaled case, a generated case): check.py fails them on that feature's input sets alone."""
    if solution == "range_limited.py":
        solution = tmp_path / solution
        solution.write_text(RANGE_LIMITED_FP8)
    write_pack(load_problem(slug), tmp_path / "pack")
    result = run_check(tmp_path / "pack", solution)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith("FAIL")
    assert "outside atol+rtol" in result.stdout
    if failing is not None:
        assert failed_distributions(result) == failing, result.stdout


def test_check_script_fails_the_hardcoded_solution_off_its_shapes(tmp_path):
    write_pack(load_problem("row_sum"), tmp_path / "pack")
    shapes = tmp_path / "pack" / "shapes.json"
    document = json.loads(shapes.read_text())
    document["smoke"] = [{"rows": 5, "cols": 1037}]
    shapes.write_text(json.dumps(document))
    result = run_check(tmp_path / "pack", SOLUTIONS / "row_sum" / "hardcoded.py")
    assert result.returncode == 1
    assert "outside atol+rtol" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("FAIL")


def packed_check(tmp_path: Path, slug: str):
    """The pack's check.py imported in this process, reading its files from the pack."""
    write_pack(load_problem(slug), tmp_path / "pack")
    spec = importlib.util.spec_from_file_location("packed_check", tmp_path / "pack" / "check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_script_reports_a_crash_a_wrong_dtype_and_zeros_in_the_graders_words(tmp_path):
    check = packed_check(tmp_path, "softmax")
    inputs = [torch.randn(2, 3)]
    rules = [{"atol": 1e-5, "rtol": 1e-5}]

    def crashing(x):
        raise NotImplementedError("no kernel yet")

    def verdict(candidate):
        return check.check_inputs(torch.nn.Softmax(-1), candidate, inputs, rules, "cpu")

    assert verdict(crashing) == "error: NotImplementedError: no kernel yet"
    assert verdict(lambda x: x.softmax(-1).double()) == (
        "output 0: dtype torch.float64, expected torch.float32"
    )
    assert "output 0: all zeros where the reference is not" in verdict(torch.zeros_like)
    assert verdict(lambda x: x.softmax(-1)) is None


def as_floats(values: list) -> list:
    """Tensors widened to compare bitwise (fp8 and bf16 are exact in fp32), with their dtypes."""
    return [(v.dtype, v.float()) if isinstance(v, torch.Tensor) else v for v in values]


def same(left: list, right: list) -> bool:
    pairs = zip(as_floats(left), as_floats(right), strict=True)
    return all(
        a[0] == b[0] and torch.equal(a[1], b[1]) if isinstance(a, tuple) else a == b
        for a, b in pairs
    )


CPU_PROBLEMS = [p.path for p in list_problems() if p.smoke] + [SELECT]


@pytest.mark.parametrize("folder", CPU_PROBLEMS, ids=lambda path: path.name)
def test_check_script_draws_the_inputs_and_builds_the_model_the_reference_process_does(folder):
    """check.py's copy of the reference process's drawing (runners.oracle: grade_inputs and
    perturb_parameters through Oracle._reference_model), held bitwise equal on every smoke shape
    and visible seed's distribution; both use the reference module's global RNG the same way."""
    problem = load_problem(folder)
    config = json.loads(json.dumps(shapes_document(problem)))  # as check.py reads it
    oracle = Oracle()
    oracle.problem = problem
    oracle.reference = reference = import_reference(problem)
    for shape in problem.smoke:
        for name, value in shape.items():
            setattr(reference, name, value)
        plan = {"params": shape, "seeds": problem.seeds}
        want, want_init = oracle._reference_model(plan, "cpu")
        model, init = pack_check.reference_model(reference, config, "cpu")
        assert same(init, want_init)
        state, want_state = model.state_dict(), want.state_dict()
        assert state.keys() == want_state.keys()
        assert same(list(state.values()), list(want_state.values()))
        for seed, distribution in zip(config["seeds"], config["distributions"], strict=True):
            drawn = pack_check.draw_inputs(reference, seed, distribution, "cpu", config["cases"])
            assert same(drawn, grade_inputs(reference, seed, distribution, "cpu", problem.cases))


def test_check_script_applies_every_built_in_distribution_as_the_reference_process():
    assert pack_check.BUILT_IN_DISTRIBUTIONS == BUILT_IN_DISTRIBUTIONS
    reference = import_reference(load_problem("softmax"))
    reference.rows, reference.cols = 3, 5
    for distribution in BUILT_IN_DISTRIBUTIONS:
        drawn = pack_check.draw_inputs(reference, 7, distribution, "cpu", {})
        assert same(drawn, grade_inputs(reference, 7, distribution, "cpu"))


def import_reference(problem):
    spec = importlib.util.spec_from_file_location(
        f"reference_{problem.slug}", problem.path / "reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_waits_for_the_gpu_lock_another_agent_holds(tmp_path):
    import fcntl
    import os
    import time

    pack = tmp_path / "pack"
    write_pack(load_problem("row_sum"), pack)
    lock = tmp_path / "gpu-0.lock"
    command = [sys.executable, "-c", WITHOUT_ENGINE, "--device", "cpu", "--solution"]
    command.append(str(SOLUTIONS / "row_sum" / "honest.py"))
    env = os.environ | {pack_check.GPU_LOCK_ENV: str(lock)}
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = subprocess.Popen(command, cwd=pack, env=env, stdout=subprocess.PIPE, text=True)
        first = waiting.stdout.readline()
        assert first.startswith(f"waiting for the GPU lock {lock}")
        time.sleep(1.0)
        assert waiting.poll() is None  # it checks nothing while the lock is held
    out, _ = waiting.communicate(timeout=180)  # released: the check runs
    assert waiting.returncode == 0 and out.rstrip().endswith("PASS")
