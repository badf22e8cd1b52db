"""bench/grade_cost.py on the CPU: a first grade and a re-grade of one solution, each with the
engine's phase split, written after every grade and not run again by a second call."""

import json
import sys

import pytest
from engine_support import RUNTIME, TINY

from bench import grade_cost


def test_a_first_grade_and_a_regrade_with_their_phases(tmp_path, monkeypatch, capsys):
    argv = ["grade_cost.py", "--device", "cpu", "--out", str(tmp_path)]
    argv += ["--grade", f"{TINY}={RUNTIME / 'honest.py'}"]
    monkeypatch.setattr(sys, "argv", argv)

    grade_cost.main()

    report = json.loads((tmp_path / "grade_cost.json").read_text())
    (entry,) = report.values()
    for kind in ("first", "regrade"):
        record = entry[kind]
        assert record["verdict"] == "ok" and record["exit"] == 0
        assert set(grade_cost.PHASES) <= set(record["cost"])
        assert record["cost"]["total_s"] <= record["wall_s"]
    printed = capsys.readouterr().out
    assert "| tiny_tanh:honest.py first (ok) |" in printed

    grade_cost.main()  # everything is there: nothing is graded again
    assert json.loads((tmp_path / "grade_cost.json").read_text()) == report
    assert " s, ok" not in capsys.readouterr().out


def test_a_bad_grade_argument_is_refused_with_its_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["grade_cost.py", "--out", str(tmp_path), "--grade", "x"])
    with pytest.raises(SystemExit, match="expected PROBLEM=SOLUTION"):
        grade_cost.main()
