"""manage.py load_graded_runs: the demo's board of real agent runs (the committed file that
bench/peer_board.py wrote from the grades four H100 workers made of KernelBench-Hard's published
runs) loaded into a fresh database: every run with our evaluation, the source's verdict and the
link to its code, no shape faster than the H100 allows, the board saying where the runs come
from, and a second load adding nothing."""

import copy
import json
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Max

from submissions.models import Evaluation, HardwareTarget, Problem, Run, ShapeResult
from submissions.services.registry import engine_hardware, seed_registry, sync_hardware_roofs

pytestmark = pytest.mark.django_db(transaction=True)

BOARD = Path(__file__).resolve().parents[2] / "submissions" / "demo" / "kernelbench_hard_h100.json"


@pytest.fixture
def board() -> dict:
    return json.loads(BOARD.read_text())


@pytest.fixture
def loaded(board, settings):
    settings.ARENA_PUBLISH_ON_GRADE = True
    seed_registry()
    sync_hardware_roofs(rows=engine_hardware())  # as manage.py sync_problems does in make demo
    call_command("load_graded_runs", str(BOARD))
    return board


def test_every_run_is_loaded_with_our_grade_and_the_sources_verdict(loaded, client, capsys):
    runs = Run.objects.select_related("problem", "hardware", "submitter")
    assert runs.count() == len(loaded["runs"]) >= 80
    assert {r.problem.slug for r in runs} == {p["slug"] for p in loaded["problems"]}
    for run, entry in zip(
        runs.order_by("source_result__run_id"),
        sorted(loaded["runs"], key=lambda e: e["source_run_id"]),
        strict=True,
    ):
        assert run.source_result == entry["source_result"]
        assert (run.hardware.slug, run.submitter.username) == ("h100-sxm", "kernelbench-hard")
        assert run.solution is None and run.transcript_status == Run.TranscriptStatus.NONE
        evaluation = run.evaluations.get()
        assert (evaluation.status, evaluation.verdict) == ("done", entry["result"]["verdict"])
        assert evaluation.worker_host == entry["graded"]["worker"]
        assert evaluation.shapes.count() == len(entry["result"]["shapes"])
        assert run.published and run.headline_evaluation_id == evaluation.pk
    assert not Evaluation.objects.exclude(status="done").exists()  # nothing queued

    capsys.readouterr()
    call_command("load_graded_runs", str(BOARD))
    assert f"0 graded run(s) loaded, {len(loaded['runs'])} already here" in capsys.readouterr().out
    assert Run.objects.count() == len(loaded["runs"])


def test_the_run_page_links_the_code_where_the_source_publishes_it(loaded, client):
    passing = Run.objects.filter(evaluations__verdict="ok").first()
    page = client.get(f"/runs/{passing.uuid}/").content.decode()
    assert f'<a href="{passing.source_url}">read it where KernelBench-Hard publishes it</a>' in page
    assert "Published by KernelBench-Hard: <b>correct</b>" in page
    for gate in ("static", "build", "correct_visible", "correct_hidden", "performance"):
        assert f"<td>{gate}</td>" in page
    assert "Transcript</dt><dd>None uploaded" in page
    assert "<em>missing</em>" not in page


def test_the_board_says_where_its_runs_come_from(loaded, client):
    page = client.get("/boards/h100-sxm/").content.decode()
    assert (
        f"{len(loaded['runs'])} of the runs counted here were published by KernelBench-Hard: "
        "real agents' runs, graded by Kernel Arena's own workers on NVIDIA H100 SXM"
    ) in page
    assert "demo-notice" not in page  # no synthetic run on it
    # configurations with one run a problem have no interval to show: never "0.0109 to 0.0109"
    assert '<span class="no-spread"' in page and "one run a problem" in page
    assert not re.search(r">([0-9.e-]+) \u2013 \1\n", page)
    statement = Problem.objects.get(slug="kbh_w4a16_gemm").statement
    assert statement.startswith("W4A16") and "github.com/Infatoshi/kernelbench.com" in statement


def test_the_board_and_charts_count_the_same_runs(loaded, client):
    runs = len(loaded["runs"])
    board = client.get("/boards/h100-sxm/").content.decode()
    charts = client.get("/boards/h100-sxm/charts/").content.decode()
    assert f"{runs} of the runs counted here were published by KernelBench-Hard" in board
    assert f"{runs} runs over " in charts


def test_no_shape_is_faster_than_the_hardware_allows(loaded):
    hardware = HardwareTarget.objects.get(slug="h100-sxm")
    assert hardware.bandwidth_gbps and hardware.peak_tflops
    shapes = ShapeResult.objects.filter(evaluation__run__hardware=hardware)
    assert shapes.exclude(median_us=None).count() > 50
    for problem in Problem.objects.filter(runs__isnull=False).distinct():
        peak = hardware.peak_tflops[problem.peak_dtype or "bf16"]
        top = shapes.filter(evaluation__run__problem=problem).aggregate(
            tflops=Max("tflops"), gbps=Max("gbps"), fraction=Max("peak_fraction")
        )
        # a problem none of whose runs reached the timing gate has no figure to check
        assert (top["tflops"] or 0) <= peak, problem.slug
        assert (top["gbps"] or 0) <= hardware.bandwidth_gbps, problem.slug
        assert (top["fraction"] or 0) <= 1.0, problem.slug


def test_bad_files_say_what_is_wrong(board, tmp_path):
    seed_registry()
    with pytest.raises(CommandError, match="No such file"):
        call_command("load_graded_runs", str(tmp_path / "absent.json"))
    (tmp_path / "text.json").write_text("not json")
    with pytest.raises(CommandError, match="not JSON"):
        call_command("load_graded_runs", str(tmp_path / "text.json"))
    for change, message in (
        ({"format": 2}, "not a graded-runs file of format 1"),
        ({"graded_on": {"target": "b300"}}, "no hardware target 'b300'"),
    ):
        (tmp_path / "bad.json").write_text(json.dumps(board | change))
        with pytest.raises(CommandError, match=message):
            call_command("load_graded_runs", str(tmp_path / "bad.json"))
    broken = copy.deepcopy(board)
    del broken["runs"][0]["graded"]
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    with pytest.raises(CommandError, match="lacks 'graded'"):
        call_command("load_graded_runs", str(tmp_path / "broken.json"))
    assert not Run.objects.exists()
