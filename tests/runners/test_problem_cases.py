"""The grading fields real problems need (problem.yaml `cases`, ties outputs, `perturb_buffers`),
end to end on CPU through tiny_select: each wrong solution fails only because of its feature,
shown by grading it again on a copy of the problem without that feature."""

import importlib.util
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import yaml
from engine_support import FAST_LIMITS, HERE, run_bounded

from runners.evaluate import evaluate
from runners.oracle import Oracle, grade_inputs, perturb_parameters
from runners.plan import plan_shapes
from runners.problem import ProblemError, load_problem
from runners.sandbox import Limits
from runners.schema import Verdict

SELECT = HERE / "problems" / "tiny_select"
SOLUTIONS = HERE / "solutions" / "tiny_select"


def grade(solution: str, problem: Path = SELECT, static: bool = True):
    path = SOLUTIONS / f"{solution}.py"
    limits = Limits(**FAST_LIMITS)
    return run_bounded(evaluate, problem, path, device="cpu", limits=limits, static=static)


def reference_module(folder: Path):
    spec = importlib.util.spec_from_file_location(
        f"reference_{folder.name}", folder / "reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def without(tmp_path: Path, change) -> Path:
    """A copy of tiny_select with `change` applied to its problem.yaml."""
    folder = Path(shutil.copytree(SELECT, tmp_path / "tiny_select"))
    spec = yaml.safe_load((folder / "problem.yaml").read_text())
    change(spec)
    (folder / "problem.yaml").write_text(yaml.safe_dump(spec))
    return folder


def test_an_honest_solution_breaking_ties_its_own_way_passes_every_case():
    result = grade("honest")
    assert result.verdict == Verdict.OK, result.reason
    assert all(shape.correct for shape in result.shapes)


def test_the_same_solution_fails_where_indices_are_compared_exactly(tmp_path):
    exact = without(tmp_path, lambda spec: spec["outputs"].update(out1={"atol": 0, "rtol": 0}))
    result = grade("honest", exact)
    assert result.verdict == Verdict.INCORRECT
    assert "output 1:" in result.reason and "outside atol+rtol" in result.reason


@pytest.mark.parametrize(
    ("solution", "feature_off"),
    [
        ("ignores_buffer", lambda spec: spec.pop("perturb_buffers")),
        ("normal_only", lambda spec: spec.update(distributions=["normal", "ragged", "uniform"])),
        ("balanced", lambda spec: spec.update(distributions=["normal", "large_x", "offset"])),
    ],
    ids=["perturbed buffer", "scaled case", "generated case"],
)
def test_a_solution_wrong_only_under_a_feature_fails_with_it_and_passes_without(
    tmp_path, solution, feature_off
):
    result = grade(solution)
    assert result.verdict == Verdict.INCORRECT, result.reason
    assert "output 2:" in result.reason or "output 0:" in result.reason

    def drop_unused_cases(spec):
        feature_off(spec)
        spec["cases"] = {k: v for k, v in spec["cases"].items() if k in spec["distributions"]}

    relaxed = grade(solution, without(tmp_path, drop_unused_cases))
    assert relaxed.verdict == Verdict.OK, relaxed.reason


# -- the reference process: inputs per case, perturbed buffers, and their errors ----------------
def prepared(folder: Path, tmp_path: Path) -> Oracle:
    """An in-process reference process prepared for the problem's CPU shapes."""
    problem = load_problem(folder)
    plans = [plan.message() for plans in plan_shapes(problem, "cpu") for plan in plans]
    for name in ("in", "ref"):
        (tmp_path / name).mkdir(exist_ok=True)
    oracle = Oracle()
    request = {"problem_dir": str(folder), "device": "cpu", "shapes": plans}
    oracle.prepare({**request, "in_dir": str(tmp_path / "in"), "ref_dir": str(tmp_path / "ref")})
    return oracle


def edited(tmp_path: Path, change=None, reference=None) -> Path:
    """A copy of tiny_select, its problem.yaml changed by `change`, its reference.py's text
    replaced per `reference` (old, new)."""
    folder = without(tmp_path, change or (lambda spec: None))
    if reference:
        path = folder / "reference.py"
        text = path.read_text()
        assert reference[0] in text
        path.write_text(text.replace(*reference))
    return folder


def preparing_error(tmp_path: Path, change=None, reference=None) -> str:
    with pytest.raises(ProblemError) as info:
        prepared(edited(tmp_path, change, reference), tmp_path)
    return str(info.value)


def test_a_scaled_case_is_the_base_draw_times_its_factors_and_a_generator_draws_its_own():
    module = reference_module(SELECT)
    cases = load_problem(SELECT).cases
    normal = grade_inputs(module, 5, "normal", "cpu", cases)
    large_x = grade_inputs(module, 5, "large_x", "cpu", cases)
    assert torch.equal(large_x[0], normal[0] * 64.0) and torch.equal(large_x[1], normal[1])
    ragged = grade_inputs(module, 5, "ragged", "cpu", cases)
    assert ragged[1][1] == 0 and not torch.equal(ragged[1], normal[1])
    both = {"ragged": replace(cases["ragged"], scale={0: 2.0})}
    assert torch.equal(grade_inputs(module, 5, "ragged", "cpu", both)[0], ragged[0] * 2.0)
    with pytest.raises(ValueError, match="unknown input distribution 'large_x'"):
        grade_inputs(module, 5, "large_x", "cpu")  # a case needs the problem's cases


def test_a_missing_generator_is_named_when_the_reference_prepares(tmp_path):
    error = preparing_error(tmp_path, reference=("def ragged_inputs", "def other_inputs"))
    assert (
        error == "problem.yaml: cases.ragged.generator: reference.py has no function ragged_inputs"
    )


def test_a_generator_drawing_other_shapes_is_refused(tmp_path):
    change = (
        "return [_grid(), offsets]\n\n\ndef get_init",
        "return [_grid()[:, 1:], offsets]\n\n\ndef get_init",
    )
    error = preparing_error(tmp_path, reference=change)
    assert "distribution 'ragged' draws inputs" in error and "same tensor shapes" in error


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        ({1: 2.0}, "cases.large_x.scale: input 1 is Tensor (torch.int64), not a floating tensor"),
        ({5: 2.0}, "cases.large_x.scale: input 5 is missing, not a floating tensor"),
    ],
)
def test_a_scale_on_anything_but_a_floating_input_is_refused(tmp_path, scale, message):
    error = preparing_error(tmp_path, lambda spec: spec["cases"]["large_x"].update(scale=scale))
    assert error == f"problem.yaml: {message}"


BUFFERS = (
    'self.register_buffer("scale", torch.ones(cols))',
    'self.register_buffer("scale", torch.ones(cols))\n'
    '        self.register_buffer("count", torch.zeros(1, dtype=torch.long))\n'
    '        self.register_buffer("cache", torch.ones(cols), persistent=False)',
)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("weight", "Model has no such buffer (its buffers: scale, count, cache)"),
        ("count", "it is torch.int64, not floating"),
        ("cache", "it is not persistent: the state_dict, which the solution loads, lacks it"),
    ],
)
def test_a_buffer_that_cannot_be_perturbed_is_named_when_the_reference_prepares(
    tmp_path, name, why
):
    error = preparing_error(tmp_path, lambda s: s.update(perturb_buffers=[name]), BUFFERS)
    assert error == f"problem.yaml: perturb_buffers names {name!r}: {why}"


def test_a_float_output_compared_up_to_ties_is_refused(tmp_path):
    change = ("indices[:, :2].contiguous()", "indices[:, :2].float()")
    assert "outputs.out1 is compared up to ties" in preparing_error(tmp_path, reference=change)


def test_a_reference_returning_other_outputs_than_problem_yaml_names_is_refused(tmp_path):
    change = ("indices[:, :2].contiguous(), sums", "indices[:, :2].contiguous()")
    error = preparing_error(tmp_path, reference=change)
    assert error == "problem.yaml: outputs names 3 output(s), the reference returns 2"


def test_the_state_dict_carries_the_perturbed_buffer(tmp_path):
    prepared(SELECT, tmp_path)
    state = torch.load(next((tmp_path / "in").glob("state_smoke0.pt")), weights_only=True)
    assert not torch.equal(state["scale"], torch.ones_like(state["scale"]))


class Quantized(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.zeros(64, dtype=torch.bfloat16))
        self.register_buffer("weight", torch.ones(64, 64).to(torch.float8_e4m3fn))
        self.register_buffer("weight_scale", torch.ones(64))


def test_fp8_buffers_are_perturbed_widened_and_parameters_as_before():
    torch.manual_seed(0)
    model = Quantized()
    perturb_parameters(model, ["weight", "weight_scale"])
    assert model.weight.dtype == torch.float8_e4m3fn
    assert model.weight.float().std() > 0.1 and model.weight_scale.std() > 0.1
    torch.manual_seed(0)
    step = torch.randn(64) * 0.25 * 0.1  # a zero parameter moves by its noise times 0.1 / 4
    assert torch.equal(model.bias, step.to(torch.bfloat16))  # drawn first, as before buffers
    torch.manual_seed(0)
    alone = Quantized()
    perturb_parameters(alone)
    assert torch.equal(alone.bias, model.bias)
    assert torch.equal(alone.weight.float(), torch.ones(64, 64))


# -- the deck's use of the fields ------------------------------------------------------------
def deck_inputs(slug: str, shape: dict, seed: int, distribution: str) -> list:
    problem = load_problem(slug)
    module = reference_module(problem.path)
    for name, value in shape.items():
        setattr(module, name, value)
    return grade_inputs(module, seed, distribution, "cpu", problem.cases)


def test_topk_control_ordering_ties_the_other_way_passes():
    problem = load_problem("topk")
    differ = []  # the graded inputs do hold ties that the two orders tell apart
    for shape in problem.smoke:
        for seed, distribution in zip(problem.seeds, problem.distributions, strict=False):
            x = deck_inputs("topk", shape, seed, distribution)[0]
            ascending = torch.sort(x, dim=-1, descending=True, stable=True).indices
            flipped = torch.sort(x.flip(-1), dim=-1, descending=True, stable=True).indices
            top = slice(0, shape["k"])
            differ.append(not torch.equal(ascending[:, top], x.shape[-1] - 1 - flipped[:, top]))
    assert any(differ)
    solution = HERE / "solutions" / "topk" / "ties_reversed.py"
    result = run_bounded(evaluate, "topk", solution, device="cpu")
    assert result.verdict == Verdict.OK, result.reason


def test_moe_ragged_case_keeps_the_empty_experts_the_bytes_formula_counts():
    problem = load_problem("moe_swiglu")
    assert "ragged" in problem.distributions[: len(problem.seeds)]
    for shape in [*problem.smoke, *problem.hidden, problem.visible[0]]:
        rows, experts = shape["tokens"] * shape["topk"], shape["experts"]
        for seed in (1, 2):
            counts = deck_inputs("moe_swiglu", shape, seed, "ragged")[1].long().diff()
            assert int(counts.sum()) == rows and int((counts == 0).sum()) == experts // 8
            assert experts // 8 < 1 or counts[-1] == 0
            assert experts // 8 < 2 or counts[0] == 0
            assert int(counts.max()) >= (rows - (experts - experts // 8)) // 2


def test_fp8_large_case_scales_a_exactly_within_the_e4m3_range():
    problem = load_problem("fp8_gemm")
    assert "large_a" in problem.distributions[: len(problem.seeds)]
    for shape in [*problem.smoke, problem.hidden[0]]:
        normal = deck_inputs("fp8_gemm", shape, 3, "normal")
        large = deck_inputs("fp8_gemm", shape, 3, "large_a")
        assert torch.equal(large[0].float(), normal[0].float() * 32.0)
        assert torch.equal(large[1].float(), normal[1].float())
        assert float(large[0].float().abs().max()) < 448.0
    assert problem.tolerance_for("large_a") == [{"atol": 32.0, "rtol": 2e-2}]


@pytest.mark.parametrize(("starter", "correct"), [("honest", True), ("balanced", False)])
def test_the_starter_is_checked_with_the_same_rules(tmp_path, starter, correct):
    """A kernel-to-kernel copy of tiny_select whose starter orders ties its own way (right up to
    ties) or assumes balanced groups (wrong on the ragged input set). The solutions here are no
    Triton kernels, so the static gate is off; the starter is checked once correctness ran."""
    folder = without(tmp_path, lambda spec: spec.update(category="triton-to-triton"))
    shutil.copyfile(SOLUTIONS / f"{starter}.py", folder / "starter.py")
    result = grade("honest", folder, static=False)
    assert result.correct_visible and result.correct_hidden, result.reason
    held_out = [shape for shape in result.shapes if shape.set == "hidden"]
    assert held_out and all(shape.starter_correct is correct for shape in held_out)
