"""python -m runners import-kernelbench-hard on a hand-written checkout in KernelBench-Hard's
layout: a scaled add whose shape names check.py renames, with stress cases (one scaling inputs,
one scaling a weight buffer); a top-k with values and indices; a problem nothing is known of;
and a broken one. The grader files under src/eval/ are ours too, with their interface."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch
import yaml
from engine_support import HERE, run_bounded
from kbh_support import RELU, write_checkout, write_files

from runners.evaluate import evaluate
from runners.kernelbench_hard import CheckoutError, import_checkout
from runners.kernelbench_hard.cases import clustered_ties, ragged_routing, short_sequences
from runners.kernelbench_hard.known import load_known
from runners.problem import REQUIRED_CASES, load_problem
from runners.schema import Verdict

ROOT = HERE.parents[1]

SCALED_ADD = {
    "problem.yaml": """
        name: 01_scaled_add
        display_name: "Scaled add"
        regime: memory
        flops_formula: "rows * cols"
        bytes_formula: "rows * cols * 6"
        peak_tflops_key: bf16
        tolerance:
          bfloat16: 0.02
          float16: 0.5
        forbidden:
          - "torch.add"
          - "F.linear"
          - "import numpy"
          - "x + y"
        sota:
          name: "torch.add"
        num_perf_trials: 10
        """,
    "reference.py": """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self, rows, cols):
                super().__init__()
                assert cols % 8 == 0, "cols must be a multiple of 8"
                self.register_buffer("weight", torch.full((cols,), 2.0, dtype=torch.bfloat16))

            def forward(self, x, y):
                return x * self.weight + y


        ROWS = 64
        COLS = 128


        def get_inputs():
            x = torch.randn(ROWS, COLS, dtype=torch.bfloat16)
            return [x, torch.randn(ROWS, COLS, dtype=torch.bfloat16)]


        def get_init_inputs():
            return [ROWS, COLS]
        """,
    "shapes.py": 'SHAPES = [{"rows": 64, "cols": 128}, {"rows": 100, "cols": 256}]\n',
    "check.py": """
        import reference


        def apply(shape):
            reference.ROWS = shape["rows"]
            reference.COLS = shape["cols"]
        """,
    "PROMPT.txt": "Write a scaled add for the test GPU.\n",
    "sota.py": "def sota_forward(x, y):\n    return x * 2 + y\n",
}

TOP_K = {
    "problem.yaml": """
        name: 02_top_k
        display_name: "Top-k"
        regime: memory
        flops_formula: "batch * n"
        bytes_formula: "batch * n * 4 + batch * k * 12"
        peak_tflops_key: fp32
        forbidden: ["torch.topk"]
        """,
    "reference.py": """
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self, batch, n, k):
                super().__init__()
                self.k = k

            def forward(self, x):
                return torch.topk(x, self.k, dim=-1)


        batch = 8
        n = 64
        k = 4


        def get_inputs():
            return [torch.randn(batch, n)]


        def get_init_inputs():
            return [batch, n, k]
        """,
    "shapes.py": 'SHAPES = [{"batch": 8, "n": 64, "k": 4}]\n',
    "PROMPT.txt": "Write a top-k.\n",
}

KNOWN = """
01_scaled_add:
  smoke:
    - {rows: 4, cols: 8}
    - {rows: 3, cols: 12}
  held_out:
    - {case: edge, rows: 1, cols: 8}
    - {case: scale-up, rows: 512, cols: 1024}
    - {case: scale-down, rows: 16, cols: 64}
    - {case: alignment-stress, rows: 33, cols: 136}
    - {case: alignment-stress, rows: 33, cols: 100}
02_top_k:
  structural: clustered_ties
"""


@pytest.fixture
def checkout(tmp_path):
    problems = write_checkout(tmp_path / "kb", property_stress='CASES = {"02_top_k": None}')
    write_files(problems / "01_scaled_add", SCALED_ADD)
    write_files(problems / "02_top_k", TOP_K)
    write_files(problems / "04_relu", RELU)
    write_files(problems / "09_broken", {"problem.yaml": "name: 09_broken\n", "PROMPT.txt": "x\n"})
    (tmp_path / "known.yaml").write_text(KNOWN)
    return tmp_path / "kb"


@pytest.fixture
def imported(checkout, tmp_path):
    dest = tmp_path / "deck"
    report = import_checkout(checkout, "h100", dest, known_file=tmp_path / "known.yaml")
    return dest, report


def test_each_problem_imports_or_is_listed_with_its_reason(imported):
    dest, report = imported
    assert [c.slug for c in report.imported] == ["kbh_scaled_add", "kbh_top_k", "kbh_relu"]
    assert report.skipped == [
        (
            "09_broken",
            "cannot read shapes.py: [Errno 2] No such file or "
            f"directory: '{report.source / '09_broken' / 'shapes.py'}'",
        )
    ]
    for slug in ("kbh_scaled_add", "kbh_top_k", "kbh_relu"):
        assert load_problem(dest / slug).slug == slug


def test_shapes_take_the_names_check_py_sets_and_formulas_follow(imported):
    dest, _ = imported
    problem = load_problem(dest / "kbh_scaled_add")
    assert problem.visible == [{"ROWS": 64, "COLS": 128}, {"ROWS": 100, "COLS": 256}]
    assert problem.smoke == [{"ROWS": 4, "COLS": 8}]  # cols 12 is refused by the reference
    assert problem.flops_expr == "ROWS * COLS" and problem.bytes({"ROWS": 2, "COLS": 8}) == 96
    assert (problem.regime, problem.peak_dtype) == ("memory", "bf16")
    assert [shape["COLS"] for shape in problem.hidden] == [8, 1024, 64, 136]  # 100 is refused
    assert set(REQUIRED_CASES) <= set(problem.hidden_cases)
    assert not set(problem.seeds) & set(problem.hidden_seeds)
    assert "ROWS is shapes.py's rows" in (problem.path / "PROMPT.md").read_text()


def test_tolerances_and_stress_cases_follow_the_outputs_dtype(imported):
    dest, _ = imported
    problem = load_problem(dest / "kbh_scaled_add")
    assert problem.outputs == {"out": {"atol": 0.02, "rtol": 0.02}}
    assert problem.distributions == ("normal", "large_x")
    assert problem.cases["large_x"].scale == {0: 64.0}
    assert problem.cases["large_x"].tolerance == {"out": {"atol": 1.0, "rtol": 0.05}}
    assert problem.perturb_buffers == ("weight",)  # in place of the weight-scaling case
    assert len(problem.seeds) == 3


def test_forbidden_substrings_become_names_the_gate_resolves(imported):
    dest, _ = imported
    problem = load_problem(dest / "kbh_scaled_add")
    assert problem.forbidden == ("torch.add", "torch.nn.functional.linear", "numpy")


def test_an_index_output_is_compared_up_to_ties_and_a_structural_case_is_appended(imported):
    dest, _ = imported
    problem = load_problem(dest / "kbh_top_k")
    assert problem.outputs["out0"] == {"atol": 1e-4, "rtol": 1e-4}
    assert problem.outputs["out1"] == {"ties": {"values": "out0", "input": 0, "dim": -1}}
    assert problem.distributions == ("normal", "clustered_ties")
    assert problem.cases["clustered_ties"].generator == "make_clustered_ties_inputs"
    reference = (problem.path / "reference.py").read_text()
    assert reference.startswith(textwrap.dedent(TOP_K["reference.py"]).lstrip().rstrip())
    assert "def make_clustered_ties_inputs():" in reference
    assert problem.smoke == [{"batch": 3, "n": 16, "k": 4}]  # the generic shrink, run on the CPU


def test_a_problem_nothing_is_known_of_has_no_held_out_shapes_and_says_why(imported):
    dest, _ = imported
    problem = load_problem(dest / "kbh_relu")
    assert problem.hidden == [] and not (problem.path / "hidden.yaml").exists()
    spec = yaml.safe_load((problem.path / "problem.yaml").read_text())
    assert spec["no_hidden"].startswith("no held-out shapes are known for 04_relu")
    assert problem.smoke == [{"batch_size": 3, "dim": 16}]
    assert problem.peak_dtype == "fp8"  # fp4, mapped and reported


def test_the_report_names_what_was_not_carried(imported):
    dest, report = imported
    text = (dest / "IMPORT_REPORT.md").read_text()
    for expected in (
        "tolerance float16: 0.5 applies to no output",
        "stress case small_w (scales weights: weight x0.5): not carried",
        "perturbed per seed (perturb_buffers)",
        "forbidden 'x + y': not a Python name, not carried",
        "forbidden 'F.linear': carried as torch.nn.functional.linear",
        "smoke shape ROWS=3, COLS=12: the reference fails: AssertionError",
        "held-out alignment-stress shape ROWS=33, COLS=100 dropped",
        "property-stress cases (property_stress.py, Hypothesis): not carried; our structural "
        "case clustered_ties stands in",
        "peak_tflops_key fp4: mapped to fp8",
        "sota.py (their library line)",
        "Absent from this checkout: problems-rtxpro6000, problems-b200",
        "- 09_broken: cannot read shapes.py",
    ):
        assert expected in text, expected
    assert "3 imported (1 with held-out shapes), 1 not imported" in report.summary()


def test_a_second_import_replaces_its_own_folders_only(checkout, imported, tmp_path):
    dest, _ = imported
    (dest / "kbh_top_k" / "reference.py").write_text("edited\n")
    again = import_checkout(checkout, "h100", dest, known_file=tmp_path / "known.yaml")
    assert len(again.imported) == 3
    assert "edited" not in (dest / "kbh_top_k" / "reference.py").read_text()
    (dest / "kbh_relu" / ".kernelbench-hard-import").unlink()  # now a folder of someone else's
    with pytest.raises(FileExistsError, match="kbh_relu: exists and was not written by"):
        import_checkout(checkout, "h100", dest, known_file=tmp_path / "known.yaml")


def test_a_report_of_another_import_is_not_overwritten(checkout, tmp_path):
    dest = tmp_path / "shared"
    dest.mkdir()
    (dest / "IMPORT_REPORT.md").write_text("# KernelBench level 1 import\n")
    with pytest.raises(FileExistsError, match=r"IMPORT_REPORT\.md: exists"):
        import_checkout(checkout, "h100", dest, known_file=tmp_path / "known.yaml")
    assert sorted(p.name for p in dest.iterdir()) == ["IMPORT_REPORT.md"]


def test_a_bad_checkout_is_a_clear_error(checkout, tmp_path):
    with pytest.raises(
        CheckoutError, match="no problems-b200 folder; this checkout has problems-h100"
    ):
        import_checkout(checkout, "b200", tmp_path / "d")
    with pytest.raises(CheckoutError, match="not a folder"):
        import_checkout(tmp_path / "absent", "h100", tmp_path / "d")
    (checkout / "benchmarks" / "hard" / "src" / "eval" / "correctness.py").unlink()
    with pytest.raises(CheckoutError, match=r"no src/eval/correctness\.py"):
        import_checkout(checkout, "h100", tmp_path / "d")
    done = _engine("import-kernelbench-hard", str(checkout), str(tmp_path / "d"))
    assert done.returncode == 2 and "no src/eval/correctness.py" in done.stderr


def test_cli_imports_and_lists_the_problems(checkout, tmp_path):
    dest = tmp_path / "cli-deck"
    done = _engine("import-kernelbench-hard", str(checkout), "--gpu", "h100", str(dest))
    assert done.returncode == 0, done.stderr
    assert "h100: 3 imported (0 with held-out shapes), 1 not imported" in done.stdout
    listing = _engine("problems", env={"ARENA_EXTRA_PROBLEMS": str(dest)})
    assert listing.returncode == 0, listing.stderr
    assert "kbh_scaled_add" in listing.stdout and "softmax" in listing.stdout


SORTED_TOP_K = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, batch, n, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        values, indices = torch.sort(x, dim=-1, descending=True)
        return values[:, : self.k].contiguous(), indices[:, : self.k].contiguous()
"""


def test_imported_problems_grade_on_cpu_with_their_cases(imported, tmp_path):
    """The scaled add with its own reference (a scaled case, a perturbed buffer); the top-k with
    a sort, whose indices may differ from torch.topk's where values tie (the clustered case)."""
    dest, _ = imported
    folder = dest / "kbh_scaled_add"
    result = run_bounded(evaluate, folder, folder / "reference.py", device="cpu")
    assert result.verdict == Verdict.OK, result.reason
    solution = tmp_path / "solution.py"
    solution.write_text(SORTED_TOP_K)
    result = run_bounded(evaluate, dest / "kbh_top_k", solution, device="cpu")
    assert result.verdict == Verdict.OK, result.reason


def test_the_known_file_covers_every_required_case_of_the_six_peer_problems():
    known = load_known()
    assert sorted(known) == [
        "01_fp8_gemm",
        "02_kda_cutlass",
        "03_paged_attention",
        "05_topk_bitonic",
        "06_sonic_moe_swiglu",
        "07_w4a16_gemm",
    ]
    for name, entry in known.items():
        assert set(REQUIRED_CASES) <= {case for case, _ in entry.held_out}, name
        assert len(entry.smoke) == 2, name


def test_ragged_routing_keeps_every_expert_and_the_row_count():
    torch.manual_seed(1)
    hidden = torch.randn(40, 8)
    offsets = torch.arange(0, 41, 5, dtype=torch.int32)  # 8 experts, 5 rows each
    _, ragged = ragged_routing([hidden, offsets])
    counts = ragged[1:] - ragged[:-1]
    assert ragged.dtype == torch.int32 and ragged.shape == offsets.shape
    assert int(ragged[-1]) == 40 and int(counts.min()) >= 1 and int(counts.max()) > 5


def test_clustered_ties_puts_pairs_of_equal_maxima_in_one_window():
    torch.manual_seed(2)
    (x,) = clustered_ties([torch.randn(3, 200)])
    top = torch.topk(x, 72, dim=-1)
    assert x.shape == (3, 200) and x.dtype == torch.float32
    assert bool((top.values[:, 0] == top.values[:, 1]).all())  # ties
    spread = top.indices.max(dim=-1).values - top.indices.min(dim=-1).values
    assert bool((spread == 71).all())  # one window of 72 columns


def test_short_sequences_keep_the_first_full_and_stay_in_range():
    torch.manual_seed(3)
    seq_lens = torch.full((6,), 100, dtype=torch.int32)
    inputs = [torch.zeros(6, 2, 4), torch.zeros(8, 16, 1, 8), torch.zeros(6, 7), seq_lens]
    lengths = short_sequences(inputs)[3]
    assert lengths.dtype == torch.int32 and int(lengths[0]) == 100
    assert int(lengths.min()) >= 1 and int(lengths.max()) <= 100 and int(lengths.min()) < 100


def _engine(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runners", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
        check=False,
    )
