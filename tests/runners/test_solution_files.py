"""A solution as a folder: solution.py and the native sources it builds (runners.solution_files).

nvcc is absent on the CPU machines: a .cu sidecar is checked, copied and read for kernel names
here; a folder graded end to end reads a header at import instead.
"""

import hashlib
import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
from engine_support import FAST_LIMITS, TINY, run_bounded

from runners.cli import main as cli_main
from runners.evaluate import evaluate
from runners.performance import Performance
from runners.plan import RunFolder
from runners.problem import load_problem
from runners.sandbox import Limits
from runners.schema import Verdict
from runners.solution_files import (
    MAX_SIDECAR_BYTES,
    MAX_SIDECARS,
    SolutionFilesError,
    check_sidecars,
    content_sha256,
    read_solution,
    split_sidecars,
    write_solution_folder,
)

HONEST = (Path(__file__).parent / "solutions" / "runtime" / "honest.py").read_text()
KERNEL_CU = """#include <torch/extension.h>

__global__ void __launch_bounds__(256) scaled_tanh_kernel(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tanhf(x[i]);
}
"""
# Reads its header by name at import, as a solution does that builds with
# cpp_extension.load(sources=[os.path.join(os.path.dirname(__file__), "kernel.cu")]).
READS_HEADER = '''"""tiny_tanh from exp; the 2 of exp(-2|x|) comes from the header beside it."""

import os
import re

import torch
import torch.nn as nn

HEADER = os.path.join(os.path.dirname(__file__), "tanh_consts.h")
with open(HEADER) as handle:
    TWO = float(re.search(r"#define TANH_TWO ([0-9.]+)f", handle.read()).group(1))


class ModelNew(nn.Module):
    def __init__(self, cols: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(cols))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        decay = torch.exp(-TWO * x.abs())
        return torch.sign(x) * (1.0 - decay) / (1.0 + decay) * self.weight
'''
HEADER = "// constants of tanh(x) = (1 - e^(-2x)) / (1 + e^(-2x))\n#define TANH_TWO 2.0f\n"


def folder_of(tmp_path: Path, source: str, sidecars: dict[str, str | bytes]) -> Path:
    return write_solution_folder(tmp_path / "solution", source, sidecars).parent


def refusal(sidecars: dict[str, bytes]) -> SolutionFilesError:
    with pytest.raises(SolutionFilesError) as caught:
        check_sidecars(sidecars)
    return caught.value


def test_a_single_file_is_a_solution_without_sidecars(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(HONEST)
    files = read_solution(path)
    assert files.source == path and files.sidecars == {}


def test_a_folder_holds_solution_py_and_its_native_sources(tmp_path):
    folder = folder_of(tmp_path, HONEST, {"kernel.cu": KERNEL_CU, "tanh_consts.h": HEADER})
    files = read_solution(folder)
    assert files.source == folder / "solution.py"
    assert files.sidecar_texts == {"kernel.cu": KERNEL_CU, "tanh_consts.h": HEADER}


def test_a_folder_without_solution_py_is_a_missing_solution(tmp_path):
    (tmp_path / "kernel.cu").write_text(KERNEL_CU)
    with pytest.raises(SolutionFilesError) as caught:
        read_solution(tmp_path)
    assert caught.value.verdict == Verdict.MISSING_SOLUTION
    assert "no solution.py in the folder" in caught.value.reason


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("helper.py", "only native sources may sit there"),
        ("kernel.so", "only native sources may sit there"),
        ("kernel.CU", "only native sources may sit there"),
        (".kernel.cu", "not hidden"),
        ("../kernel.cu", "no folders"),
        ("sub/kernel.cu", "no folders"),
        ("-rf.cu", "use letters, digits"),
        ("k" * 101 + ".cu", "at most 100 characters"),
    ],
)
def test_a_sidecar_name_outside_the_rules_is_refused_by_name(name, says):
    error = refusal({"kernel.cu": KERNEL_CU.encode(), name: b"// x\n"})
    assert error.verdict == Verdict.FORBIDDEN and error.name == name
    assert says in error.reason


def test_sidecars_must_be_utf8_text_within_the_count_and_size_caps():
    assert "not UTF-8" in refusal({"kernel.cu": b"\xff\xfe"}).reason
    assert "NUL byte" in refusal({"kernel.cu": b"int x;\x00"}).reason
    many = {f"k{i}.h": b"" for i in range(MAX_SIDECARS + 1)}
    assert f"at most {MAX_SIDECARS}" in refusal(many).reason
    big = {"a.cu": b"x" * MAX_SIDECAR_BYTES, "b.cu": b"y"}
    assert f"at most {MAX_SIDECAR_BYTES}" in refusal(big).reason


def test_a_symlink_or_subfolder_in_the_folder_is_refused(tmp_path):
    folder = folder_of(tmp_path, HONEST, {})
    (folder / "kernel.cu").symlink_to("/etc/passwd")
    with pytest.raises(SolutionFilesError, match=r"kernel\.cu is a symbolic link"):
        read_solution(folder)
    (folder / "kernel.cu").unlink()
    (folder / "csrc").mkdir()
    with pytest.raises(SolutionFilesError, match="csrc is not a plain file"):
        read_solution(folder)


def test_a_folder_past_the_size_cap_is_refused(tmp_path):
    folder = folder_of(tmp_path, HONEST, {})
    with (folder / "big.cu").open("wb") as handle:
        handle.truncate(MAX_SIDECAR_BYTES + 1)
    with pytest.raises(SolutionFilesError, match=f"total {MAX_SIDECAR_BYTES + 1} bytes"):
        read_solution(folder)


def test_a_bad_folder_fails_the_static_gate_naming_the_file(tmp_path):
    folder = folder_of(tmp_path, HONEST, {})
    (folder / "helper.py").write_text("import os\n")
    result = evaluate(TINY, folder, device="cpu")
    assert result.verdict == Verdict.FORBIDDEN
    static = result.gates[0]
    assert (static.name, static.status, static.details["file"]) == ("static", "fail", "helper.py")
    assert "'helper.py' beside solution.py" in result.reason
    assert [g.status for g in result.gates[1:]] == ["skip"] * 5


def test_the_native_rules_refuse_in_a_sidecars_text(tmp_path):
    spawns = KERNEL_CU + "\nvoid helper() { if (fork() == 0) { for (;;) {} } }\n"
    folder = folder_of(tmp_path, HONEST, {"kernel.cu": spawns})
    result = evaluate(TINY, folder, device="cpu")
    assert result.verdict == Verdict.FORBIDDEN
    assert result.reason.startswith(
        "static: kernel.cu line 8: native source uses fork( [processes]"
    )
    (hit,) = result.gates[0].details["hits"]
    assert hit == {
        "file": "kernel.cu",
        "rule": "processes",
        "line": 8,
        "message": "native source uses fork(",
    }


def test_the_run_folder_gets_the_sidecars_read_only_beside_solution_py(tmp_path):
    folder = folder_of(tmp_path, HONEST, {"kernel.cu": KERNEL_CU, "tanh_consts.h": HEADER})
    run = RunFolder(uid=os.getuid(), sandboxed=False)
    try:
        target = run.add_solution(folder, load_problem(TINY))
        assert target == run.cand / "solution.py"
        copied = {p.name for p in run.cand.iterdir()}
        assert copied == {"solution.py", "kernel.cu", "tanh_consts.h", "problem"}
        assert (run.cand / "kernel.cu").read_text() == KERNEL_CU
        for name in ("solution.py", "kernel.cu", "tanh_consts.h"):
            assert stat.S_IMODE((run.cand / name).stat().st_mode) == 0o444
    finally:
        run.remove()


def test_the_launch_check_knows_kernels_defined_in_a_sidecar(tmp_path):
    folder = folder_of(tmp_path, HONEST, {"kernel.cu": KERNEL_CU})
    grading = SimpleNamespace(
        problem=None,
        device="cpu",
        hardware=None,
        shapes={},
        visible=[],
        hidden=[],
        solution=folder,
    )
    assert Performance(grading).kernels.cuda == {"scaled_tanh_kernel"}


def test_a_folder_whose_solution_reads_a_header_at_import_grades_ok(tmp_path):
    # kernel.cu is never built here; its file write is an idiom the engine grades and flags.
    debug = KERNEL_CU + '\nvoid dump() { FILE* f = fopen("rows.txt", "w"); fclose(f); }\n'
    folder = folder_of(tmp_path, READS_HEADER, {"tanh_consts.h": HEADER, "kernel.cu": debug})
    limits = Limits(**FAST_LIMITS)
    result = run_bounded(evaluate, TINY, folder, device="cpu", limits=limits)
    assert result.verdict == Verdict.OK, result.reason
    static = result.gates[0]
    assert static.reason.endswith(
        "; 2 native source(s) beside it checked, flagged and graded: file_write in kernel.cu"
    )
    (flag,) = static.details["flags"]
    assert (flag["file"], flag["rule"], flag["line"]) == ("kernel.cu", "file_write", 8)


def test_the_cli_grades_a_folder(tmp_path, capsys):
    folder = folder_of(tmp_path, HONEST, {})
    (folder / "notes.txt").write_text("x")
    out = tmp_path / "result.json"
    argv = ["evaluate", "--problem", str(TINY), "--solution", str(folder), "--device", "cpu"]
    assert cli_main([*argv, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["verdict"] == Verdict.FORBIDDEN
    assert "'notes.txt' beside solution.py" in capsys.readouterr().out


def published(source: str, sidecars: dict[str, str], *, size: dict[str, int] | None = None):
    """A solution text with its sidecars appended the way the peer benchmark publishes them."""
    text = source
    for name, body in sidecars.items():
        count = (size or {}).get(name, len(body))
        frame = "# " + "=" * 66
        marker = f"# ===== sidecar: {name} ({count} bytes, loaded by solution.py) ====="
        text += f"\n\n{frame}\n{marker}\n{frame}\n\n{body}"
    return text


def test_split_sidecars_returns_the_solution_and_each_file_as_written():
    sidecars = {"kernel.cu": KERNEL_CU, "tanh_consts.h": "// é → 2\n" + HEADER}
    source, found = split_sidecars(published(HONEST, sidecars))
    assert source == HONEST and found == sidecars


def test_split_sidecars_accepts_a_count_in_utf8_bytes():
    body = "// π\n"
    _, found = split_sidecars(published(HONEST, {"k.cu": body}, size={"k.cu": 6}))
    assert found == {"k.cu": body}


def test_a_text_without_markers_is_all_solution():
    assert split_sidecars(HONEST) == (HONEST, {})


def test_split_sidecars_refuses_a_wrong_count_a_repeated_name_and_a_bad_name():
    with pytest.raises(SolutionFilesError, match="the marker says 5"):
        split_sidecars(published(HONEST, {"kernel.cu": KERNEL_CU}, size={"kernel.cu": 5}))
    twice = published(published(HONEST, {"k.cu": "a\n"}), {"k.cu": "b\n"})
    with pytest.raises(SolutionFilesError, match="appears twice"):
        split_sidecars(twice)
    with pytest.raises(SolutionFilesError, match="no folders"):
        split_sidecars(published(HONEST, {"../k.cu": "a\n"}))


def test_content_hash_keeps_a_single_files_hash_and_dedupes_folders():
    source = HONEST.encode()
    assert content_sha256(source, {}) == hashlib.sha256(source).hexdigest()
    one = content_sha256(source, {"a.cu": b"x", "b.h": b"y"})
    assert one == content_sha256(source, {"b.h": b"y", "a.cu": b"x"})
    assert one != content_sha256(source, {"a.cu": b"x", "c.h": b"y"})
    assert one != content_sha256(source, {"a.cu": b"xy", "b.h": b""})
    assert one != content_sha256(source, {})
