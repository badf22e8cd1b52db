import math
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runners.problem import (
    HIDDEN_CASES,
    ExprError,
    ProblemError,
    copy_without_hidden,
    evaluate_expr,
    list_problems,
    load_problem,
    problems_root,
)

DECK = ("rmsnorm", "row_sum", "softmax")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A writable copy of the rmsnorm problem to break in a test."""
    ignore = shutil.ignore_patterns("__pycache__")
    return Path(shutil.copytree(problems_root() / "rmsnorm", tmp_path / "rmsnorm", ignore=ignore))


def edit_yaml(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))


def problem_error(folder: Path) -> str:
    with pytest.raises(ProblemError) as info:
        load_problem(folder)
    return str(info.value)


def test_deck_lists_the_warm_ups_among_the_problems():
    slugs = [p.slug for p in list_problems()]
    assert slugs == sorted(slugs) and set(DECK) <= set(slugs)  # the hard deck: test_deck.py


@pytest.mark.parametrize("slug", DECK)
def test_every_deck_problem_meets_the_format(slug):
    problem = load_problem(slug)
    assert len(problem.seeds) >= 3 and len(problem.hidden_seeds) >= 3
    assert not set(problem.seeds) & set(problem.hidden_seeds)
    assert set(problem.hidden_cases) == set(HIDDEN_CASES)
    assert len(problem.hidden) == len(problem.hidden_cases) >= 4
    assert all("case" not in shape for shape in problem.hidden)
    assert problem.cpu_capable
    assert problem.outputs == {"out": problem.outputs["out"]}
    for shape in problem.visible + problem.smoke + problem.hidden:
        assert problem.flops(shape) > 0 and problem.bytes(shape) > 0


def test_rmsnorm_fields_are_read_as_written():
    problem = load_problem("rmsnorm")
    assert (problem.category, problem.regime, problem.peak_dtype) == (
        "pytorch-to-kernel",
        "memory",
        "bf16",
    )
    assert problem.param_names == ("tokens", "hidden")
    assert problem.flops({"tokens": 2, "hidden": 3}) == 24
    assert problem.distributions == ("normal", "large", "offset")
    assert "torch.rms_norm" in problem.forbidden
    assert problem.starter_path is None


def test_softmax_tolerances_and_starter_are_present():
    problem = load_problem("softmax")
    assert problem.outputs["out"] == {"atol": 1e-5, "rtol": 1e-5}
    assert problem.starter_path is not None
    assert any(shape["cols"] & (shape["cols"] - 1) for shape in problem.visible)


def test_problem_loads_from_a_path_as_well_as_a_slug(folder):
    assert load_problem(folder).slug == "rmsnorm"
    assert load_problem(str(folder)).version == load_problem("rmsnorm").version


def test_unknown_slug_is_a_problem_error():
    with pytest.raises(ProblemError, match=r"no problem\.yaml"):
        load_problem("nope")


def test_version_changes_with_any_file_including_hidden_yaml(folder):
    before = load_problem(folder).version
    (folder / "hidden.yaml").write_text((folder / "hidden.yaml").read_text() + "\n")
    assert load_problem(folder).version != before


def test_version_ignores_pycache_and_dotfiles(folder):
    before = load_problem(folder).version
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "reference.cpython-311.pyc").write_bytes(b"x")
    (folder / ".DS_Store").write_bytes(b"x")
    assert load_problem(folder).version == before


def test_version_does_not_depend_on_the_folder_location(folder, tmp_path):
    moved = shutil.copytree(folder, tmp_path / "elsewhere" / "rmsnorm")
    assert load_problem(moved).version == load_problem(folder).version


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(category="cuda"), "field category"),
        (lambda d: d.update(regime="latency"), "field regime"),
        (lambda d: d.update(peak_dtype="fp64"), "field peak_dtype"),
        (lambda d: d.update(seeds=[1, 2]), "at least 3"),
        (lambda d: d.update(seeds=[1, 1, 2]), "at least 3"),
        (lambda d: d.update(slug="other"), "differs from rmsnorm/"),
        (lambda d: d.pop("title"), "missing field(s) title"),
        (lambda d: d.update(tolerance=0.1), "unknown field(s) tolerance"),
        (lambda d: d.update(flops="2 * tokens * width"), "unknown name(s) ['width']"),
        (lambda d: d.update(bytes="__import__('os')"), "field bytes"),
        (lambda d: d.update(outputs={"y": {"atol": 1, "rtol": 1}}), "use out, or out0"),
        (lambda d: d.update(outputs={"out": {"atol": 1}}), "exactly atol and rtol"),
        (lambda d: d.update(outputs={"out": {"atol": "x", "rtol": 1}}), "outputs.out.atol"),
        (lambda d: d.update(forbidden=["torch.sum()"]), "not a dotted name"),
        (lambda d: d["shapes"]["visible"].append({"tokens": 3}), "shapes.visible[4]"),
        (lambda d: d["shapes"]["smoke"].append({"tokens": 0, "hidden": 1}), "positive integer"),
        (lambda d: d.update(time_cap_s=-1), "time_cap_s"),
        (lambda d: d.update(distributions=[]), "distributions"),
    ],
)
def test_malformed_problem_yaml_names_the_file_and_field(folder, change, message):
    edit_yaml(folder / "problem.yaml", change)
    error = problem_error(folder)
    assert error.startswith("problem.yaml:") and message in error


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(seeds=[42, 5, 6]), "differ from the visible seeds"),
        (lambda d: d.update(shapes=d["shapes"][:3]), "at least 4"),
        (lambda d: d["shapes"][0].update(case="corner"), "shapes[0].case"),
        (lambda d: [s.update(case="edge") for s in d["shapes"]], "lacks case(s)"),
        (lambda d: d["shapes"][1].update(rows=3), "shapes[1]"),
        (lambda d: d.update(extra=1), "exactly the fields"),
    ],
)
def test_malformed_hidden_yaml_names_the_file_and_field(folder, change, message):
    edit_yaml(folder / "hidden.yaml", change)
    error = problem_error(folder)
    assert error.startswith("hidden.yaml:") and message in error


@pytest.mark.parametrize("name", ["reference.py", "PROMPT.md", "hidden.yaml"])
def test_missing_file_is_named(folder, name):
    (folder / name).unlink()
    assert problem_error(folder).startswith(f"{name}: missing")


def test_starter_is_required_for_kernel_to_kernel_categories(folder):
    edit_yaml(folder / "problem.yaml", lambda d: d.update(category="triton-to-triton"))
    assert problem_error(folder).startswith("starter.py: missing")


def test_prompt_must_carry_the_shapes_placeholder(folder):
    (folder / "PROMPT.md").write_text("no table here\n")
    assert "{{visible_shapes}}" in problem_error(folder)


def test_string_tolerances_from_yaml_are_read_as_numbers(folder):
    (folder / "problem.yaml").write_text(
        (folder / "problem.yaml").read_text().replace("atol: 2.0e-2", "atol: 1e-5")
    )
    assert load_problem(folder).outputs["out"]["atol"] == 1e-5


def test_empty_smoke_list_means_not_cpu_capable(folder):
    edit_yaml(folder / "problem.yaml", lambda d: d["shapes"].update(smoke=[]))
    assert not load_problem(folder).cpu_capable


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("2 * m * n", 24.0),
        ("(m + n) // 3 - -1", 3.0),
        ("m ** 2 % 5 / 2", 2.0),
        ("max(m, n, 1) + min(m, 2.5)", 6.5),
        ("-m", -3.0),
    ],
)
def test_expressions_evaluate_over_shape_names(expr, value):
    assert evaluate_expr(expr, {"m": 3, "n": 4}) == value


@pytest.mark.parametrize(
    "expr",
    [
        "__import__('os').system('true')",
        "m.bit_length()",
        "abs(m)",
        "[m][0]",
        "m if n else 1",
        "'a' * m",
        "m < n",
        "2 ** 10 ** 10",
        "m / 0",
        "k * 2",
        "max(*[m, n])",
        "True + m",
        "2 *",
    ],
)
def test_expressions_outside_the_whitelist_are_rejected(expr):
    with pytest.raises(ExprError):
        evaluate_expr(expr, {"m": 3, "n": 4})


def test_large_but_sane_expressions_keep_full_range():
    assert math.isclose(evaluate_expr("2 * m * n * k", {"m": 65536, "n": 8192, "k": 8192}), 2**43)


def test_copy_without_hidden_leaves_out_hidden_yaml_and_is_read_only(tmp_path):
    problem = load_problem("softmax")
    dest = copy_without_hidden(problem, tmp_path / "copy")
    names = sorted(p.name for p in dest.iterdir())
    assert names == ["PROMPT.md", "problem.yaml", "reference.py", "starter.py"]
    assert all(not p.stat().st_mode & stat.S_IWUSR for p in dest.iterdir())


def test_hidden_free_copy_loads_without_hidden_shapes(tmp_path):
    dest = copy_without_hidden(load_problem("rmsnorm"), tmp_path / "rmsnorm")
    with pytest.raises(ProblemError, match=r"hidden\.yaml: missing"):
        load_problem(dest)
    copy = load_problem(dest, require_hidden=False)
    assert copy.hidden == [] and copy.hidden_seeds == [] and copy.visible


def test_loader_does_not_import_torch():
    code = "import sys, runners.problem as p; p.list_problems(); print('torch' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert result.stdout.strip() == "False", result.stderr


def two_outputs(spec: dict) -> None:
    spec["outputs"] = {"out0": {"atol": 0.0, "rtol": 0.0}, "out1": {"atol": 0.0, "rtol": 0.0}}


def with_case(name: str, case: dict, distributions=None):
    def change(spec: dict) -> None:
        spec["cases"] = {name: case}
        spec["distributions"] = distributions or ["normal", name]

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(distributions=["normal", "huge"]), "'huge', neither built in"),
        (with_case("large_x", {"scale": {0: 64.0}}, ["normal"]), "cases.large_x is listed not"),
        (
            with_case("large_x", {"scale": {0: 64.0}}, ["normal", "offset", "uniform", "large_x"]),
            "cases.large_x is listed at position 4 in distributions, which the 3 seeds",
        ),
        (with_case("large-x", {"scale": {0: 64.0}}), "not an identifier"),
        (with_case("large_x", {"scal": {0: 64.0}}), "cases.large_x must be a mapping of"),
        (with_case("large_x", [64.0]), "cases.large_x must be a mapping of"),
        (with_case("large", {"scale": {0: 8.0}}), "built-in distribution, which may carry only"),
        (with_case("large_x", {"scale": {"0": 64.0}}), "cases.large_x.scale has key '0'"),
        (with_case("large_x", {"scale": {-1: 64.0}}), "cases.large_x.scale has key -1"),
        (with_case("large_x", {"scale": {0: 0}}), "scale.0 must be a finite non-zero number"),
        (with_case("large_x", {"scale": {0: "inf"}}), "scale.0 must be a finite non-zero"),
        (with_case("large_x", {"scale": [64.0]}), "scale must map input positions to factors"),
        (with_case("ragged", {"generator": "make ragged"}), "generator must name a function"),
        (with_case("ragged", {"generator": 3}), "generator must name a function"),
        (with_case("big", {"tolerance": {"out9": {"atol": 1, "rtol": 1}}}), "names 'out9'"),
        (with_case("big", {"tolerance": {"out": {"atol": 1}}}), "tolerance.out must have exactly"),
        (with_case("big", {"tolerance": {"out": {"atol": -1, "rtol": 0}}}), "tolerance.out.atol"),
        (lambda d: d.update(cases=[1]), "field cases must map case names"),
        (lambda d: d.update(perturb_buffers="weight"), "perturb_buffers must list distinct"),
        (lambda d: d.update(perturb_buffers=["weight", "weight"]), "perturb_buffers"),
        (lambda d: d.update(perturb_buffers=["weight()"]), "perturb_buffers"),
    ],
)
def test_malformed_cases_and_buffers_name_the_field(folder, change, message):
    edit_yaml(folder / "problem.yaml", change)
    error = problem_error(folder)
    assert error.startswith("problem.yaml:") and message in error, error


def ties(**rule):
    def change(spec: dict) -> None:
        two_outputs(spec)
        spec["outputs"]["out1"] = {"ties": {"values": "out0", "input": 0, "dim": -1, **rule}}

    return change


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (ties(values="out1"), "outputs.out1.ties.values is 'out1'"),
        (ties(values="out7"), "outputs.out1.ties.values is 'out7'"),
        (ties(values=["out0"]), "outputs.out1.ties.values is ['out0']"),
        (ties(input=-1), "outputs.out1.ties.input must be an input position"),
        (ties(input=True), "outputs.out1.ties.input must be an input position"),
        (ties(dim=1.0), "outputs.out1.ties.dim must be an integer"),
        (ties(extra=1), "outputs.out1 must be {ties: {values, input, dim}} exactly"),
        (
            lambda d: [ties()(d), d["outputs"]["out1"].update(atol=0)],
            "outputs.out1 must be {ties: {values, input, dim}} exactly",
        ),
        (
            lambda d: [ties()(d), d["outputs"]["out0"].update(ties=d["outputs"]["out1"]["ties"])],
            "outputs.out0 must be {ties",
        ),
        (
            lambda d: [
                ties()(d),
                with_case("big", {"tolerance": {"out1": {"atol": 1, "rtol": 1}}})(d),
            ],
            "tolerance.out1: out1 is compared up to ties; give the tolerance of its values output",
        ),
    ],
)
def test_malformed_ties_rules_name_the_field(folder, change, message):
    edit_yaml(folder / "problem.yaml", change)
    error = problem_error(folder)
    assert error.startswith("problem.yaml:") and message in error, error


def test_tolerances_follow_each_distribution_and_ties_name_outputs_by_position(folder):
    def change(spec: dict) -> None:
        ties()(spec)
        spec["cases"] = {
            "large_x": {"scale": {0: 64.0}, "tolerance": {"out0": {"atol": 2.0, "rtol": 0.5}}},
            "large": {"tolerance": {"out0": {"atol": 3.0, "rtol": 0.5}}},
            "ragged": {"generator": "ragged_inputs"},
        }
        spec["distributions"] = ["large_x", "large", "ragged"]
        spec["perturb_buffers"] = ["weight_scale", "block.bias"]

    edit_yaml(folder / "problem.yaml", change)
    problem = load_problem(folder)
    rule = {"ties": {"values": 0, "input": 0, "dim": -1}}
    assert problem.tolerance_for("large_x") == [{"atol": 2.0, "rtol": 0.5}, rule]
    assert problem.tolerance_for("large") == [{"atol": 3.0, "rtol": 0.5}, rule]
    assert problem.tolerance_for("ragged") == [{"atol": 0.0, "rtol": 0.0}, rule]
    assert problem.tolerance_for("offset") == problem.tolerance_for("ragged")
    assert problem.cases["ragged"].generator == "ragged_inputs"
    assert problem.cases["large_x"].scale == {0: 64.0}
    assert problem.ties["out1"].values == "out0"
    assert problem.perturb_buffers == ("weight_scale", "block.bias")


def test_problems_without_the_new_fields_keep_their_defaults():
    problem = load_problem("rmsnorm")
    assert problem.cases == {} and problem.perturb_buffers == () and problem.ties == {}
    assert problem.tolerance_for("large") == [problem.outputs["out"]]
