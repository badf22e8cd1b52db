"""Reference timings a grade cannot afford: one that runs past its limit gives its kind up for
the rest of the grade (and, cached so, for later grades), the budget leaves the rest to a later
grade, and the grade itself goes on to its verdict and score."""

import shutil
from pathlib import Path

import pytest
from engine_support import FAST_LIMITS, RUNTIME, TINY, run_bounded

from runners import performance
from runners.evaluate import evaluate
from runners.sandbox import Limits
from runners.schema import Verdict


def slow_reference(tmp_path: Path, delay_s: float) -> Path:
    """tiny_tanh with two smoke shapes and a reference that sleeps `delay_s` in each call."""
    folder = tmp_path / "tiny_tanh"
    shutil.copytree(TINY, folder)
    reference = folder / "reference.py"
    forward = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    text = reference.read_text()
    assert forward in text
    text = text.replace(forward, f"{forward}        time.sleep({delay_s})\n")
    reference.write_text("import time\n" + text)
    spec = folder / "problem.yaml"
    smoke = "  smoke:\n    - {rows: 4, cols: 8}\n"
    assert smoke in spec.read_text()
    spec.write_text(spec.read_text().replace(smoke, smoke + "    - {rows: 8, cols: 16}\n"))
    return folder


def grade(problem: Path):
    return run_bounded(
        evaluate, problem, RUNTIME / "honest.py", device="cpu", limits=Limits(**FAST_LIMITS)
    )


def test_a_baseline_past_its_limit_gives_its_kind_up_and_the_grade_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(performance, "BASELINE_TIMEOUT_S", 1.0)
    result = grade(slow_reference(tmp_path, delay_s=0.3))

    assert result.verdict == Verdict.OK, result.reason
    smoke = [shape for shape in result.shapes if shape.set == "smoke"]
    assert len(smoke) == 2
    for shape in smoke:
        assert shape.baseline_timed_out == ["eager"]
        assert shape.baseline_eager is None and shape.speedup_eager is None
        assert shape.peak_fraction > 0  # the score does not need the reference's time
    one, two = (f"smoke shape {n} {shape.params}" for n, shape in enumerate(smoke, 1))
    assert result.gate("score").details["baseline_notes"] == [
        f"{one} eager: ran past 1 s; not timed again",
        f"{two} eager: not timed (eager ran past 1 s on {one})",
    ]
    assert result.score > 0
    assert result.cost["baselines_s"] < 5


def test_baselines_the_budget_cannot_pay_are_left_for_a_later_grade(tmp_path, monkeypatch):
    monkeypatch.setattr(performance, "BASELINE_BUDGET_S", 0.0)
    result = grade(slow_reference(tmp_path, delay_s=0.0))

    assert result.verdict == Verdict.OK, result.reason
    notes = result.gate("score").details["baseline_notes"]
    smoke = [shape for shape in result.shapes if shape.set == "smoke"]
    assert notes == [
        f"smoke shape {n} {shape.params} eager: not timed (the grade's 0 s for baselines are spent)"
        for n, shape in enumerate(smoke, 1)
    ]
    assert all(s.baseline_timed_out == [] and s.baseline_eager is None for s in smoke)


@pytest.mark.parametrize("kind", performance.BASELINE_ORDER)
def test_every_kind_has_its_place_in_the_order(kind):
    assert kind in (*performance.BASELINES["cuda"], "starter")
