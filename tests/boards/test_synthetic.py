import math
import sys
from collections import Counter

import pytest

from bench.synthetic_history import (
    MARK,
    PERSONAS,
    main,
    remove_synthetic,
    synthetic_runs,
    write_bench,
    write_history,
)
from runners.schema import GATE_NAMES, EvaluationResult, Verdict
from submissions.models import BoardSnapshot, Evaluation, Run, ShapeResult
from tests.factories import make_evaluation, make_problem, make_run

pytestmark = pytest.mark.django_db
SHAPES = [{"rows": 8192, "cols": 1000}, {"rows": 32768, "cols": 4096}]


@pytest.fixture
def deck():
    return [
        make_problem("softmax", peak_dtype="fp32", visible_count=2, visible_shapes=SHAPES),
        make_problem("rmsnorm", peak_dtype="bf16", visible_count=2, visible_shapes=SHAPES),
    ]


@pytest.fixture
def history(deck):
    return write_history(runs_per_cell=2)


def test_every_synthetic_run_is_marked_as_demo_data(history):
    runs = Run.objects.all()
    assert runs.count() == history.runs > 50
    for run in runs:
        assert run.metadata["demo"] == MARK and "no agent wrote this run" in run.metadata["note"]
        assert run.published and run.headline_evaluation_id is not None
        assert set(run.figure_sources.values()) == {MARK}


def test_the_history_covers_the_configurations_and_targets_of_the_demo(history):
    configs = set(Run.objects.values_list("language_model__slug", "harness__slug", "effort"))
    hardware = set(Run.objects.values_list("hardware__slug", flat=True))
    assert len(configs) == len(PERSONAS) == 12
    assert hardware == {"h100-sxm", "h200", "cpu"}
    assert set(history.boards) == hardware
    assert BoardSnapshot.objects.filter(hardware__slug__in=hardware).count() == 3


def test_every_failure_kind_heads_some_run(history):
    verdicts = Counter(Run.objects.values_list("headline_evaluation__verdict", flat=True))
    assert set(verdicts) == set(Verdict.ALL)
    assert verdicts == Counter(history.verdicts)
    assert verdicts[Verdict.OK] > sum(verdicts.values()) / 2


def test_a_grader_failure_and_re_grades_appear_and_a_re_grade_heads_its_run(history):
    assert Evaluation.objects.filter(status=Evaluation.Status.ERROR, result={}).exists()
    regraded = Evaluation.objects.filter(trigger=Evaluation.Trigger.REEVALUATE)
    assert regraded.exists()
    for evaluation in regraded.select_related("run"):
        assert evaluation.run.headline_evaluation_id == evaluation.pk
        assert evaluation.run.evaluations.count() == 2


def test_stored_results_read_back_through_the_engine_schema(history):
    for evaluation in Evaluation.objects.exclude(result={}):
        result = EvaluationResult.from_dict(evaluation.result)
        passed = {gate.name for gate in result.gates if gate.status == "pass"}
        assert result.verdict == evaluation.verdict
        assert evaluation.correct_visible == ("correct_visible" in passed)
        assert evaluation.correct_hidden == ("correct_hidden" in passed)
        assert tuple(gate.name for gate in result.gates) == GATE_NAMES
        assert evaluation.shapes.count() == len(result.shapes)


def test_gpu_runs_have_visible_and_held_out_shapes_and_scores_from_peak_fractions(history):
    passed = Run.objects.filter(headline_evaluation__verdict="ok", hardware__slug="h100-sxm")
    run = passed.select_related("headline_evaluation").first()
    shapes = ShapeResult.objects.filter(evaluation=run.headline_evaluation)
    visible = shapes.filter(set="visible").order_by("index")
    assert [shape.params for shape in visible] == SHAPES
    assert shapes.filter(set="hidden").count() == 2  # make_problem's hidden_count
    assert all(shape.tflops and shape.gbps and shape.speedup_eager for shape in shapes)
    fractions = [shape.peak_fraction for shape in visible]
    geomean = (fractions[0] * fractions[1]) ** 0.5
    assert run.headline_evaluation.score == pytest.approx(geomean)


def test_the_held_out_score_counts_the_held_out_cases_sized_like_the_visible_shapes(history):
    for evaluation in Evaluation.objects.filter(verdict="ok", hardware__slug="h200"):
        result = EvaluationResult.from_dict(evaluation.result)
        held_out = [shape for shape in result.shapes if shape.set == "hidden"]
        scored = [shape.peak_fraction for shape in held_out if shape.scored]
        assert all(shape.scored is not None for shape in held_out)
        if scored:
            geomean = math.prod(scored) ** (1 / len(scored))
            assert evaluation.hidden_score == pytest.approx(geomean)
        else:
            assert evaluation.hidden_score is None


def test_each_problem_keeps_one_arithmetic_intensity_across_runs(history):
    shapes = ShapeResult.objects.filter(set="visible", tflops__gt=0)
    ratios = {}
    for problem, tflops, gbps in shapes.values_list(
        "evaluation__run__problem__slug", "tflops", "gbps"
    ):
        ratios.setdefault(problem, set()).add(round(tflops * 1000 / gbps, 9))
    assert all(len(values) == 1 for values in ratios.values())


def test_cpu_runs_are_graded_on_smoke_shapes_against_the_declared_cpu_roofline(history):
    evaluations = Evaluation.objects.filter(hardware__slug="cpu", verdict="ok")
    assert evaluations.exists()
    for evaluation in evaluations:
        smoke = evaluation.shapes.filter(set="smoke")
        assert {shape.set for shape in evaluation.shapes.all()} == {"smoke", "hidden"}
        assert 0 < evaluation.score < 0.01  # the interpreter is far from the roofline
        assert evaluation.hidden_score is None  # the CPU times no held-out shape
        assert all(shape.speedup_eager and shape.speedup_compile is None for shape in smoke)


def test_runs_are_spread_over_weeks_and_graded_after_they_arrive(history):
    dates = sorted(Run.objects.values_list("created_at", flat=True))
    assert (dates[-1] - dates[0]).days > 30
    for evaluation in Evaluation.objects.select_related("run"):
        assert evaluation.run.created_at <= evaluation.created_at <= evaluation.finished_at


def test_writing_again_replaces_the_synthetic_runs_only(deck):
    real = make_run(problem=deck[0], metadata={"demo": True})
    evaluation = make_evaluation(real)
    first = write_history(runs_per_cell=1)

    second = write_history(runs_per_cell=1)

    assert second.removed == first.runs == second.runs
    assert synthetic_runs().count() == second.runs
    assert Run.objects.filter(pk=real.pk, metadata={"demo": True}).exists()
    assert evaluation.shapes.count() == 2
    assert Evaluation.objects.count() == second.evaluations + 1


def test_removing_the_synthetic_history_leaves_real_runs(deck):
    real = make_run(problem=deck[0])
    write_history(runs_per_cell=1)

    remove_synthetic()

    assert list(Run.objects.all()) == [real]
    assert ShapeResult.objects.count() == 0


def test_the_bench_data_has_the_number_of_runs_asked_for(deck):
    report = write_bench(runs=60)
    assert report.runs == Run.objects.count() == 60
    assert report.shapes == ShapeResult.objects.count()


def test_without_a_problem_deck_nothing_is_written(db):
    with pytest.raises(LookupError, match="sync_problems"):
        write_history()
    assert not Run.objects.exists()


def test_the_script_reports_what_it_wrote(deck, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["synthetic_history.py", "--runs-per-cell", "1"])
    assert main() == 0
    assert main() == 0
    first, second = capsys.readouterr().out.splitlines()
    assert f"synthetic history: {synthetic_runs().count()} runs" in second
    assert "replaced 0 runs" in first and "boards refreshed: cpu, h100-sxm, h200" in first

    monkeypatch.setattr(sys, "argv", ["synthetic_history.py", "--runs", "25"])
    assert main() == 0
    assert capsys.readouterr().out.startswith("synthetic history: 25 runs, ")
    assert synthetic_runs().count() == 25


def test_the_script_refuses_without_a_problem_deck(db, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["synthetic_history.py"])
    with pytest.raises(SystemExit, match="sync_problems"):
        main()


def test_library_and_starter_references_appear_only_where_the_problem_has_them(db):
    make_problem("topk", visible_count=2, visible_shapes=SHAPES)  # the deck's has a Library
    starter = make_problem(
        "layernorm_triton", category="triton-to-triton", visible_count=2, visible_shapes=SHAPES
    )
    write_history(runs_per_cell=1)

    gpu = ShapeResult.objects.filter(evaluation__verdict="ok", evaluation__hardware__device="cuda")
    topk, kernel = (
        gpu.filter(evaluation__run__problem__slug="topk"),
        gpu.exclude(evaluation__run__problem__slug="topk"),
    )
    assert all(shape.speedup_library and shape.speedup_starter is None for shape in topk)
    assert all(shape.speedup_starter and shape.speedup_library is None for shape in kernel)
    compared = Evaluation.objects.exclude(starter_quadrant="")
    assert set(compared.values_list("run__problem", flat=True)) == {starter.pk}
    for evaluation in compared:
        quadrant = {True: "both_pass", False: "regression"}
        if not evaluation.starter_hidden_correct:
            quadrant = {True: "improvement", False: "both_fail"}
        assert evaluation.starter_quadrant == quadrant[evaluation.correct_hidden]
