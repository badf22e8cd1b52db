"""python -m runners import-kernelbench on hand-written KernelBench-style files, the speedup
regime it writes, and ARENA_EXTRA_PROBLEMS."""

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from engine_support import HERE, run_bounded, solution_rules

from runners.evaluate import evaluate
from runners.kernelbench import import_level
from runners.problem import ProblemError, list_problems, load_problem, problems_root
from runners.schema import Verdict
from runners.scoring import geomean
from runners.smoke_fit import fit

ROOT = HERE.parents[1]

ELEMENTWISE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2.0

batch_size = 4096
dim = 1024 * 8

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
"""

MATMUL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, out_features, bias_shape):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, K))
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, a):
        return a @ self.weight.t() + self.bias

M = 1024 * 2
K = 4096
N = 2048
bias_shape = (N,)
kernel_size = (3, 5)

def get_inputs():
    return [torch.randn(M, K)]

def get_init_inputs():
    return [N, bias_shape]
"""

NO_CONSTANTS = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x + 1

def get_inputs():
    return [torch.randn(8, 8)]

def get_init_inputs():
    return []
"""

BROKEN = "import torch\nclass Model(nn.Module:\n    pass\n"


@pytest.fixture
def checkout(tmp_path):
    level = tmp_path / "kb" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    files = {
        "1_Scaled_ReLU.py": ELEMENTWISE,
        "2_Matmul_bias.py": MATMUL,
        "3_No_constants.py": NO_CONSTANTS,
        "10_Broken.py": BROKEN,
    }
    for name, text in files.items():
        (level / name).write_text(textwrap.dedent(text).lstrip())
    return tmp_path / "kb"


@pytest.fixture
def imported(checkout, tmp_path):
    dest = tmp_path / "deck"
    report = import_level(checkout, 1, dest)
    return dest, report


def test_each_file_imports_or_is_listed_with_its_reason(imported):
    dest, report = imported
    assert [c.slug for c in report.imported] == ["kb-l1-1-scaled-relu", "kb-l1-2-matmul-bias"]
    reasons = dict(report.skipped)
    assert (
        reasons["3_No_constants.py"] == "no module-level integer size constants to make a shape of"
    )
    assert reasons["10_Broken.py"].startswith("syntax error at line 2")
    text = (dest / "IMPORT_REPORT.md").read_text()
    assert "2 imported" in text and "2 not imported" in text and "10_Broken.py" in text


def test_an_imported_elementwise_file_loads_with_its_own_sizes_visible(imported):
    dest, _ = imported
    problem = load_problem(dest / "kb-l1-1-scaled-relu")
    assert problem.visible == [{"batch_size": 4096, "dim": 8192}]
    assert problem.smoke == [{"batch_size": 3, "dim": 16}]
    assert (problem.regime, problem.category) == ("speedup", "pytorch-to-kernel")
    assert problem.flops_expr is None and problem.flops(problem.visible[0]) is None
    assert problem.outputs == {"out": {"atol": 1e-4, "rtol": 1e-4}}
    assert problem.distributions == ("normal",)
    assert [shape["batch_size"] for shape in problem.hidden] == [1, 6144, 1024, 2, 4095]
    assert {shape["dim"] for shape in problem.hidden} == {8192, 16}
    assert {"edge", "scale-up", "scale-down", "alignment-stress"} == set(problem.hidden_cases)
    prompt = (problem.path / "PROMPT.md").read_text()
    assert "{{visible_shapes}}" in prompt
    deck_prompt = (load_problem("rmsnorm").path / "PROMPT.md").read_text()
    assert solution_rules(prompt) == solution_rules(deck_prompt)


def test_a_size_the_model_reads_itself_stays_fixed_and_derived_constants_follow(imported):
    dest, _ = imported
    problem = load_problem(dest / "kb-l1-2-matmul-bias")
    assert problem.visible == [
        {"M": 2048, "K": 4096, "N": 2048, "kernel_size_0": 3, "kernel_size_1": 5}
    ]
    assert problem.smoke == [{"M": 16, "K": 4096, "N": 16, "kernel_size_0": 3, "kernel_size_1": 5}]
    assert all(shape["K"] == 4096 for shape in problem.hidden)  # Model reads K as a global
    reference = _module(problem.path / "reference.py")
    reference.N, reference.kernel_size_1 = 24, 7
    assert reference.get_init_inputs() == [24, (24,)]
    assert reference.kernel_size == (3, 7)


def test_an_import_needs_a_new_or_empty_folder(checkout, imported):
    dest, _ = imported
    with pytest.raises(FileExistsError, match="new or empty folder"):
        import_level(checkout, 1, dest)
    with pytest.raises(FileNotFoundError, match="level2"):
        import_level(checkout, 2, dest / "other")


def test_an_imported_problem_grades_its_reference_on_cpu_by_speedup(imported):
    dest, _ = imported
    folder = dest / "kb-l1-1-scaled-relu"
    result = run_bounded(evaluate, folder, folder / "reference.py", device="cpu")
    assert result.verdict == Verdict.OK, result.reason
    assert result.correct_visible and result.correct_hidden
    smoke = [s for s in result.shapes if s.set == "smoke"]
    assert all(s.peak_fraction is None and s.tflops is None for s in smoke)
    assert result.score == pytest.approx(geomean([s.speedup_eager for s in smoke]))
    assert [s.params["batch_size"] for s in result.shapes if s.set == "hidden"] == [2]
    score_gate = next(g for g in result.gates if g.name == "score")
    assert "speedups over eager" in score_gate.reason


def test_the_speedup_regime_alone_may_leave_out_flops_and_bytes(imported, tmp_path):
    dest, _ = imported
    folder = shutil.copytree(dest / "kb-l1-1-scaled-relu", tmp_path / "kb-l1-1-scaled-relu")
    _edit_yaml(folder, regime="memory")
    with pytest.raises(ProblemError, match="missing field"):
        load_problem(folder)


def test_no_hidden_stands_in_for_hidden_yaml_and_excludes_it(imported, tmp_path):
    dest, _ = imported
    folder = shutil.copytree(dest / "kb-l1-1-scaled-relu", tmp_path / "kb-l1-1-scaled-relu")
    _edit_yaml(folder, no_hidden="the sizes cannot vary")
    with pytest.raises(ProblemError, match=r"hidden\.yaml exists"):
        load_problem(folder)
    (folder / "hidden.yaml").unlink()
    assert load_problem(folder).hidden == []


def test_cli_imports_and_lists_extra_problems(checkout, tmp_path):
    dest = tmp_path / "cli-deck"
    done = _engine("import-kernelbench", str(checkout), "--level", "1", str(dest))
    assert done.returncode == 0, done.stderr
    assert "level 1: 2 imported" in done.stdout and "3_No_constants.py" in done.stdout
    listing = _engine("problems", env={"ARENA_EXTRA_PROBLEMS": str(dest)})
    assert listing.returncode == 0, listing.stderr
    assert "kb-l1-1-scaled-relu" in listing.stdout and "softmax" in listing.stdout
    pack = _engine(
        "pack",
        "kb-l1-2-matmul-bias",
        str(tmp_path / "pack"),
        env={"ARENA_EXTRA_PROBLEMS": str(dest)},
    )
    assert pack.returncode == 0, pack.stderr
    assert (tmp_path / "pack" / "reference.py").is_file()


def test_extra_problems_load_by_slug_from_several_folders(imported, tmp_path, monkeypatch):
    dest, _ = imported
    second = tmp_path / "second"
    second.mkdir()
    shutil.move(dest / "kb-l1-2-matmul-bias", second)
    monkeypatch.setenv("ARENA_EXTRA_PROBLEMS", f"{dest}:{second}")
    assert load_problem("kb-l1-2-matmul-bias").path == (second / "kb-l1-2-matmul-bias").resolve()
    slugs = [p.slug for p in list_problems()]
    assert {"kb-l1-1-scaled-relu", "kb-l1-2-matmul-bias", "softmax"} <= set(slugs)


def test_a_slug_found_twice_is_an_error(imported, tmp_path, monkeypatch):
    dest, _ = imported
    shutil.copytree(problems_root() / "softmax", dest / "softmax")
    monkeypatch.setenv("ARENA_EXTRA_PROBLEMS", str(dest))
    with pytest.raises(ProblemError, match="'softmax' is in both"):
        list_problems()
    with pytest.raises(ProblemError, match="'softmax' is in both"):
        load_problem("kb-l1-1-scaled-relu")
    done = _engine("problems", env={"ARENA_EXTRA_PROBLEMS": str(dest)})
    assert done.returncode == 2 and "is in both" in done.stderr


def test_a_missing_extra_folder_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_EXTRA_PROBLEMS", str(tmp_path / "absent"))
    with pytest.raises(ProblemError, match=r"ARENA_EXTRA_PROBLEMS: .*absent is not a folder"):
        list_problems()


def _edit_yaml(folder: Path, **changes) -> None:
    spec = yaml.safe_load((folder / "problem.yaml").read_text())
    (folder / "problem.yaml").write_text(yaml.safe_dump({**spec, **changes}))


def _module(path: Path):
    spec = importlib.util.spec_from_file_location("imported_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _engine(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runners", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


POOLED = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pools = nn.Sequential(*[nn.MaxPool2d(2) for _ in range(5)])

    def forward(self, x):
        return self.pools(x).flatten(1).sum(1)

batch_size = 8
height = 224
width = 224

def get_inputs():
    return [torch.rand(batch_size, 3, height, width)]

def get_init_inputs():
    return []
"""

BUILT_FOR_ITS_SIZE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        assert x.shape[-1] == 96, f"input size {x.shape[-1]} does not match the model (96)"
        return x * 2

batch_size = 4
image_size = 96

def get_inputs():
    return [torch.rand(batch_size, image_size)]

def get_init_inputs():
    return []
"""

NEEDS_A_MISSING_PACKAGE = """
import torch
import torch.nn as nn
import kernel_arena_not_installed

class Model(nn.Module):
    def forward(self, x):
        return x + 1

batch_size = 64
dim = 512

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
"""


@pytest.fixture
def networks(tmp_path):
    level = tmp_path / "kb" / "KernelBench" / "level3"
    level.mkdir(parents=True)
    files = {
        "1_Pooled.py": POOLED,
        "2_Built_for_its_size.py": BUILT_FOR_ITS_SIZE,
        "3_Missing_package.py": NEEDS_A_MISSING_PACKAGE,
    }
    for name, text in files.items():
        (level / name).write_text(textwrap.dedent(text).lstrip())
    return tmp_path / "kb"


def test_smoke_shapes_grow_until_the_reference_runs_there(networks, tmp_path):
    """Shrunk without knowing the model, 224x224 becomes 28x28, which five poolings cannot
    take, and a model built for its size asserts on any other; the import runs each reference
    at its smoke shape and doubles the shrunk sizes until it runs."""
    report = import_level(networks, 3, tmp_path / "deck", fit_smoke=fit)
    smoke = {c.slug: c.smoke for c in report.imported}
    assert smoke["kb-l3-1-pooled"] == {"batch_size": 3, "height": 56, "width": 56}
    assert smoke["kb-l3-2-built-for-its-size"] == {"batch_size": 3, "image_size": 96}
    notes = {c.slug: c.smoke_note for c in report.imported}
    assert "height=28, width=28: RuntimeError" in notes["kb-l3-1-pooled"]
    assert "does not match the model (96)" in notes["kb-l3-2-built-for-its-size"]
    problem = load_problem(tmp_path / "deck" / "kb-l3-1-pooled")
    assert problem.smoke == [{"batch_size": 3, "height": 56, "width": 56}]
    assert {"batch_size": 2, "height": 56, "width": 56} in problem.hidden  # smoke, batch - 1


def test_a_reference_that_runs_at_no_size_keeps_no_smoke_shape_and_says_why(networks, tmp_path):
    report = import_level(networks, 3, tmp_path / "deck", fit_smoke=fit)
    missing = next(c for c in report.imported if c.slug == "kb-l3-3-missing-package")
    assert missing.smoke is None and missing.hidden  # still held-out shapes for the GPU
    assert "No module named 'kernel_arena_not_installed'" in missing.smoke_note
    text = (tmp_path / "deck" / "IMPORT_REPORT.md").read_text()
    assert "2 with CPU smoke shapes" in text
    assert "| kb-l3-3-missing-package | level3/3_Missing_package.py | no (the reference" in text
    assert load_problem(tmp_path / "deck" / "kb-l3-3-missing-package").smoke == []


def test_without_the_smoke_check_the_shrunk_shapes_stay(networks, tmp_path):
    report = import_level(networks, 3, tmp_path / "deck")
    pooled = next(c for c in report.imported if c.slug == "kb-l3-1-pooled")
    assert pooled.smoke == {"batch_size": 3, "height": 28, "width": 28}
    assert pooled.smoke_note is None


def test_the_import_without_its_smoke_check_needs_no_torch(checkout, tmp_path):
    code = (
        "import sys\nfrom runners.cli import main\n"
        f"main(['import-kernelbench', {str(checkout)!r}, '--level', '1', {str(tmp_path / 'd')!r},"
        " '--no-smoke-check'])\nprint('torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "2 imported" in done.stdout and done.stdout.strip().endswith("False")
