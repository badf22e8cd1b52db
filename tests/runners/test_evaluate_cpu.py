"""The deck on CPU (smoke shapes, Triton interpreter) and the CLI's contract."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from engine_support import FAST_LIMITS, HERE, RUNTIME, TINY, grade_tiny, run_bounded

from runners.evaluate import evaluate
from runners.hardware import CPU, peak_fraction
from runners.problem import STARTER_CATEGORIES, list_problems, load_problem
from runners.schema import GATE_NAMES, EvaluationResult, TimingStats, Verdict, baseline_key
from runners.scoring import geomean

ROOT = HERE.parents[1]


def triton_honest_problems() -> list[str]:
    slugs = []
    for problem in list_problems():
        honest = HERE / "solutions" / problem.slug / "honest.py"
        if problem.cpu_capable and honest.is_file() and "import triton" in honest.read_text():
            slugs.append(problem.slug)
    return slugs


@pytest.mark.parametrize("slug", triton_honest_problems())
def test_honest_triton_solution_passes_each_cpu_capable_problem(slug):
    result = run_bounded(evaluate, slug, HERE / "solutions" / slug / "honest.py", device="cpu")
    assert result.verdict == Verdict.OK, result.reason
    assert [g.name for g in result.gates] == list(GATE_NAMES)
    assert result.correct_visible and result.correct_hidden
    assert result.timings_comparable is False
    assert {s.set for s in result.shapes} == {"smoke", "hidden"}
    assert all(s.time for s in result.shapes if s.set == "smoke")
    assert result.isolation["env"] == "allow-list"
    assert_honest_cpu_figures(result, load_problem(slug))


def assert_honest_cpu_figures(result: EvaluationResult, problem) -> None:
    """Every smoke shape timed against eager and the declared CPU roofline; score their geomean."""
    smoke = [s for s in result.shapes if s.set == "smoke"]
    for shape in smoke:
        seconds = shape.time.median_us * 1e-6
        flops, nbytes = problem.flops(shape.params), problem.bytes(shape.params)
        assert shape.tflops == pytest.approx(flops / seconds / 1e12)
        assert shape.gbps == pytest.approx(nbytes / seconds / 1e9)
        roofline = dict(regime=problem.regime, dtype=problem.peak_dtype, seconds=seconds)
        expected = peak_fraction(CPU, flops=flops, nbytes=nbytes, **roofline)
        assert shape.peak_fraction == pytest.approx(expected) and shape.peak_fraction > 0
        eager = shape.baseline_eager
        assert eager.n >= 3 and eager.median_us > 0 and not shape.baseline_cached
        assert shape.speedup_eager == pytest.approx(eager.median_us / shape.time.median_us)
        assert shape.baseline_compile is None and shape.speedup_compile is None
    assert result.score == pytest.approx(geomean([s.peak_fraction for s in smoke]))
    assert 0 < result.score < 1 and result.hidden_score is None
    assert all(s.time is None for s in result.shapes if s.set == "hidden")
    assert result.environment["hardware"] == "cpu"
    assert "declared CPU roofline" in result.gate("score").reason
    # CI grades on CPU many times; a kernel-to-kernel problem also times its starter, a naive
    # kernel that the Triton interpreter runs far slower than the eager reference.
    budget_s = 8.0 if problem.category in STARTER_CATEGORIES else 2.0
    assert result.cost["baselines_s"] < budget_s


def test_cpu_times_its_own_eager_reference_and_ignores_cached_timings():
    import torch

    from runners.sandbox import Limits
    from runners.timing import PROTOCOL

    problem = load_problem(TINY)
    key = baseline_key(problem.version, problem.smoke[0], "cpu", torch.__version__, PROTOCOL)
    stale = TimingStats(1e9, 1e9, 0.0, 1e9, 1e9, 1e9, 50).to_dict()
    result = run_bounded(
        evaluate,
        TINY,
        RUNTIME / "honest.py",
        device="cpu",
        baselines={key: {"eager": stale, "compile": None}},
        limits=Limits(**FAST_LIMITS),
    )
    assert result.verdict == Verdict.OK, result.reason
    shape = result.shapes[0]
    assert shape.baseline_key == key
    assert not shape.baseline_cached and shape.baseline_eager.median_us < 1e9
    assert_honest_cpu_figures(result, problem)


def test_missing_solution_file_is_its_own_verdict(tmp_path: Path):
    result = evaluate(TINY, tmp_path / "solution.py", device="cpu")
    assert result.verdict == Verdict.MISSING_SOLUTION
    assert result.score == 0.0
    assert {g.status for g in result.gates} == {"skip"}


def test_syntax_error_stops_at_the_static_gate(tmp_path: Path):
    solution = tmp_path / "solution.py"
    solution.write_text("class ModelNew(:\n")
    result = evaluate(TINY, solution, device="cpu")
    assert result.verdict == Verdict.SYNTAX_ERROR
    assert result.gates[0].details["hits"][0]["rule"] == "syntax"
    assert result.gate("build").status == "skip"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runners", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_writes_a_result_and_exits_zero_for_a_failing_candidate(tmp_path: Path):
    out = tmp_path / "result.json"
    solution = HERE / "solutions" / "runtime" / "reference_resubmitted.py"
    done = run_cli(
        "evaluate",
        "--problem",
        str(TINY),
        "--solution",
        str(solution),
        "--device",
        "cpu",
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    result = EvaluationResult.from_dict(json.loads(out.read_text()))
    assert result.verdict == Verdict.FORBIDDEN
    assert "forbidden" in done.stdout


def evaluate_honest(*flags: str):
    solution = HERE / "solutions" / "runtime" / "honest.py"
    return run_cli(
        "evaluate", "--problem", str(TINY), "--solution", str(solution), "--device", "cpu", *flags
    )


def test_cli_progress_says_each_step_on_stderr_as_it_ends():
    done = evaluate_honest("--progress")
    assert done.returncode == 0, done.stderr
    steps = [line.split(" ", 1)[1] for line in done.stderr.splitlines() if line[:2].isdigit()]
    assert steps[:2] == ["gate static: started", "gate static: pass in 0.0 s"]
    assert any(step.startswith("reference inputs and outputs in ") for step in steps)
    assert any(step.startswith("compared smoke 1: match") for step in steps)
    assert any(step.startswith("timed smoke 1: ") for step in steps)
    assert steps[-1].startswith("gate score: pass in ")
    quiet = evaluate_honest()
    assert "gate static" not in quiet.stderr


def test_cli_progress_detail_says_each_request_and_the_candidates_phases():
    done = evaluate_honest("--progress", "detail")
    assert done.returncode == 0, done.stderr
    requests = [line.split(" ", 1)[1].strip() for line in done.stderr.splitlines() if "  " in line]
    build = next(r for r in requests if r.startswith("candidate build: "))
    assert "(import " in build and "construct " in build and "to device " in build
    run = next(r for r in requests if r.startswith("candidate run: "))
    assert "inputs " in run and "calls " in run and "save " in run
    timed = next(r for r in requests if r.startswith("candidate time: "))
    assert "measure " in timed
    assert any(r.startswith("reference prepare: ") for r in requests)
    assert any(r.startswith("reference recheck: ") for r in requests)


def refuse_non_finite(constant: str):
    raise AssertionError(f"{constant} in the result JSON")


def test_cli_writes_finite_json_for_a_wildly_wrong_output(tmp_path: Path):
    out = tmp_path / "result.json"
    solution = RUNTIME / "wildly_wrong.py"
    done = run_cli(
        "evaluate",
        "--problem",
        str(TINY),
        "--solution",
        str(solution),
        "--device",
        "cpu",
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text(), parse_constant=refuse_non_finite)
    assert data["verdict"] == Verdict.INCORRECT and data["score"] == 0.0
    assert "shapes[0].max_rel_err" in data["non_finite"]
    assert data["shapes"][0]["max_rel_err"] is None
    assert data["shapes"][0]["max_abs_err"] == pytest.approx(3.0e38, rel=1e-3)
    assert EvaluationResult.from_dict(data).to_dict() == data


def test_cli_rejects_an_unknown_problem_with_status_two(tmp_path: Path):
    done = run_cli(
        "evaluate",
        "--problem",
        "no_such_problem",
        "--solution",
        "x.py",
        "--device",
        "cpu",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert done.returncode == 2
    assert not (tmp_path / "r.json").exists()


def test_cli_reads_cached_baselines_from_an_earlier_result(tmp_path: Path):
    from runners.cli import read_baselines

    earlier = {
        "shapes": [
            {"baseline_key": "k", "baseline_eager": {"median_us": 1.0}, "baseline_compile": None}
        ]
    }
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(earlier))
    unknown = {"library": None, "starter": None, "starter_correct": None, "timed_out": []}
    assert read_baselines(path) == {"k": {"eager": {"median_us": 1.0}, "compile": None, **unknown}}


def test_cpu_grading_refuses_a_problem_without_smoke_shapes(tmp_path: Path):
    import shutil

    from runners.problem import ProblemError

    folder = Path(shutil.copytree(TINY, tmp_path / "tiny_tanh"))
    spec = (folder / "problem.yaml").read_text()
    (folder / "problem.yaml").write_text(spec.replace("  smoke:\n    - {rows: 4, cols: 8}\n", ""))
    with pytest.raises(ProblemError, match="CUDA only"):
        evaluate(folder, HERE / "solutions" / "runtime" / "honest.py", device="cpu")


def test_each_short_shape_is_timed_in_every_round_each_in_a_fresh_process(monkeypatch):
    from runners import performance, processes

    # CUDA times 2 or 6 rounds; CPU one by default
    monkeypatch.setitem(performance.TIMING_ROUNDS, "cpu", 2)
    started = []
    new_candidate = processes.new_candidate

    def recorded(*args):
        worker = new_candidate(*args)
        started.append(worker.proc.pid)
        return worker

    monkeypatch.setattr(processes, "new_candidate", recorded)
    result = run_bounded(grade_tiny, "honest")
    assert result.verdict == Verdict.OK, result.reason
    performance = next(g for g in result.gates if g.name == "performance")
    assert performance.details["settings"]["rounds"] == 2
    # The second round ran in a process started for it, the solution built there again.
    assert len(started) == len(set(started)) == 2
    assert len(performance.details["process_starts_s"]) == 1
    assert performance.reason.endswith(
        "in 2 rounds, each in a fresh process (CPU: smoke shapes "
        "only, not comparable, no speed-of-light floor)"
    )
    timed = [s for s in result.shapes if s.time]
    assert timed and all(s.time.rounds == 2 and s.time.n >= 2 * 3 for s in timed)


def test_a_shape_whose_rounds_disagree_takes_more_rounds_until_settled(monkeypatch):
    """After its rounds a shape that `scoring.unsettled` finds imprecise is timed in more
    rounds, each in a fresh process, and stops once settled or at `MORE_ROUNDS` times its
    rounds."""
    from runners import performance, scoring

    monkeypatch.setitem(performance.TIMING_ROUNDS, "cpu", 2)
    monkeypatch.setitem(performance.MORE_ROUNDS, "cpu", 3)
    asked = []

    def settles_at_four(stats):
        asked.append(stats.rounds)
        return stats.rounds < 4

    monkeypatch.setattr(scoring, "unsettled", settles_at_four)
    result = run_bounded(grade_tiny, "honest")
    assert result.verdict == Verdict.OK, result.reason
    gate = next(g for g in result.gates if g.name == "performance")
    # Asked as a round's replies come (the next process loads meanwhile) and once they are
    # re-checked: after the rounds, then after each extra round.
    assert asked == [2, 2, 3, 3, 4, 4]
    assert gate.details["settings"]["rounds"] == 2 and gate.details["settings"]["most_rounds"] == 6
    assert gate.details["more_rounds"] == {"smoke 1": 2}
    assert len(gate.details["process_starts_s"]) == 3
    reason = "in 2 rounds, each in a fresh process; 1 of them, whose rounds disagreed, in up to 4"
    assert reason in gate.reason
    (timed,) = [s for s in result.shapes if s.time]
    assert timed.time.rounds == len(timed.time.round_medians_us) == 4

    # A shape that never settles stops at MORE_ROUNDS times its rounds.
    monkeypatch.setattr(scoring, "unsettled", lambda stats: True)
    result = run_bounded(grade_tiny, "honest")
    gate = next(g for g in result.gates if g.name == "performance")
    assert result.verdict == Verdict.OK and gate.details["more_rounds"] == {"smoke 1": 4}
    assert [s.time.rounds for s in result.shapes if s.time] == [6]


def test_a_solution_that_fails_to_import_in_a_later_round_process_is_a_runtime_error(monkeypatch):
    """Each round after the first starts a fresh process, which imports the solution again: a
    failure there fails the performance gate with the import's error, the earlier gates kept."""
    from runners import performance

    monkeypatch.setitem(performance.TIMING_ROUNDS, "cpu", 2)
    result = grade_tiny("fails_in_second_process", static=False)
    assert result.verdict == Verdict.RUNTIME_ERROR
    assert "this solution imports only once" in result.reason
    assert result.correct_visible and result.correct_hidden
    status = {gate.name: gate.status for gate in result.gates}
    assert status["build"] == status["correct_visible"] == "pass"
    assert status["performance"] == "fail"
