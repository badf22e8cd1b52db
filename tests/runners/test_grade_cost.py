"""bench/grade_cost.py on the CPU: a first grade and re-grades of one solution, each with the
engine's phase split and its shapes' times, the re-grades' spread, written after every grade
and not run again by a second call."""

import json
import sys
import time

import pytest
from engine_support import RUNTIME, TINY

from bench import grade_cost
from runners import sandbox
from runners.problem import load_problem


def test_a_first_grade_and_regrades_with_their_phases_and_spread(tmp_path, monkeypatch, capsys):
    argv = ["grade_cost.py", "--device", "cpu", "--out", str(tmp_path), "--regrades", "2"]
    argv += ["--grade", f"{TINY}={RUNTIME / 'honest.py'}"]
    monkeypatch.setattr(sys, "argv", argv)

    grade_cost.main()

    report = json.loads((tmp_path / "grade_cost.json").read_text())
    (entry,) = report.values()
    records = [entry["first"], *entry["regrades"]]
    assert len(records) == 3
    for record in records:
        assert record["verdict"] == "ok" and record["exit"] == 0
        assert set(grade_cost.PHASES) <= set(record["cost"])
        assert record["cost"]["total_s"] <= record["wall_s"]
        assert record["shapes"] and all(us > 0 for us in record["shapes"].values())
    # the first grade started from an empty disk cache and filled it; the re-grades used it
    # (sandboxed grades only: runners.reference_cache)
    caps = sandbox.probe()
    cached = "2 of 2" if caps.namespaces and caps.setpriv else "0 of 2"
    first_log = (tmp_path / "tiny_tanh_honest.py.first.log").read_text()
    assert "0 of 2 shapes from the cache" in first_log
    again_log = (tmp_path / "tiny_tanh_honest.py.regrade1.log").read_text()
    assert f"{cached} shapes from the cache" in again_log
    assert entry["spread"]["grades"] == 2
    assert set(entry["spread"]["shapes"]) == set(entry["regrades"][0]["shapes"])
    printed = capsys.readouterr().out
    assert "| tiny_tanh:honest.py first (ok) |" in printed
    assert "| tiny_tanh:honest.py regrade2 (ok) |" in printed
    assert "tiny_tanh:honest.py: 2 re-grades" in printed

    grade_cost.main()  # everything is there: nothing is graded again
    assert json.loads((tmp_path / "grade_cost.json").read_text()) == report
    assert " s, ok" not in capsys.readouterr().out


def test_spread_holds_each_shape_to_the_target_for_its_size():
    records = [
        {"score": 0.5, "shapes": {"visible0": 100.0, "visible1": 10.0, "hidden0": 3.0}},
        {"score": 0.5, "shapes": {"visible0": 101.0, "visible1": 10.1, "hidden0": 3.3}},
    ]

    spread = grade_cost.spread(records)

    assert spread["shapes"]["visible0"]["target_pct"] == 0.5
    assert spread["shapes"]["visible0"]["within"] is False  # 0.70 % at 100 us
    assert spread["shapes"]["visible1"]["target_pct"] == 1.5
    assert spread["shapes"]["visible1"]["within"] is True  # 0.70 % at 10 us
    assert spread["shapes"]["hidden0"]["within"] is None  # under 5 us: correctness only
    assert spread["all_within"] is False
    assert spread["score_cv_pct"] == 0.0


def test_a_bad_grade_argument_is_refused_with_its_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["grade_cost.py", "--out", str(tmp_path), "--grade", "x"])
    with pytest.raises(SystemExit, match="expected PROBLEM=SOLUTION"):
        grade_cost.main()


def test_no_grade_starts_that_would_end_past_until(tmp_path, monkeypatch, capsys):
    """A device call's deadline: the first grade is expected to take --grade-s; past the
    deadline nothing starts, and a later call goes on where this one stopped."""
    argv = ["grade_cost.py", "--device", "cpu", "--out", str(tmp_path), "--regrades", "1"]
    argv += ["--grade", f"{TINY}={RUNTIME / 'honest.py'}"]
    argv += ["--until", str(time.time() + 60), "--grade-s", "3600"]
    monkeypatch.setattr(sys, "argv", argv)

    grade_cost.main()

    assert "tiny_tanh:honest.py first: not started" in capsys.readouterr().out
    (entry,) = json.loads((tmp_path / "grade_cost.json").read_text()).values()
    assert "first" not in entry and entry["regrades"] == []


def test_a_regrade_is_expected_to_take_the_longest_of_its_kind_so_far():
    entry = {"first": {"wall_s": 100.0}, "regrades": []}
    assert grade_cost._expected_s(entry, "regrade1", 240.0) == 100.0
    entry["regrades"] = [{"wall_s": 40.0}, {"wall_s": 55.0}]
    assert grade_cost._expected_s(entry, "regrade3", 240.0) == 55.0
    assert grade_cost._expected_s(entry, "first", 240.0) == 240.0


def test_a_time_cap_grades_a_copy_of_the_problem_under_its_own_name(tmp_path, monkeypatch):
    argv = ["grade_cost.py", "--device", "cpu", "--out", str(tmp_path), "--regrades", "0"]
    argv += ["--grade", f"{TINY}={RUNTIME / 'honest.py'}", "--time-cap", "0.25"]
    monkeypatch.setattr(sys, "argv", argv)

    grade_cost.main()

    (name,) = json.loads((tmp_path / "grade_cost.json").read_text())
    assert name == "tiny_tanh:honest.py (time cap 0.25 s)"
    copy = load_problem(tmp_path / "problems" / "cap0.25" / "tiny_tanh")
    assert copy.time_cap_s == 0.25 and copy.version != load_problem(TINY).version
    result = json.loads(next(tmp_path.glob("*.first.json")).read_text())
    assert result["verdict"] == "ok" and result["problem"] == "tiny_tanh"


def test_a_time_cap_that_is_not_positive_is_refused_before_any_grade(tmp_path, monkeypatch, capsys):
    argv = ["grade_cost.py", "--device", "cpu", "--out", str(tmp_path), "--time-cap", "0"]
    monkeypatch.setattr(sys, "argv", [*argv, "--grade", f"{TINY}={RUNTIME / 'honest.py'}"])

    with pytest.raises(SystemExit):
        grade_cost.main()

    assert "--time-cap 0: expected a positive number of seconds" in capsys.readouterr().err
    assert not (tmp_path / "grade_cost.json").exists()
