"""The board snapshot: which runs count, their records, the stored rows, and its freshness."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from submissions.boards import snapshot
from submissions.models import BoardSnapshot
from tests.factories import make_run

pytestmark = pytest.mark.django_db


def records_of(arena) -> snapshot.Records:
    return snapshot.build_records(hardware_id=arena.h100.pk)


def test_only_published_runs_on_ranked_hardware_and_active_problems_with_a_headline_count(
    arena, grade
):
    counted = grade()
    grade(published=False)
    grade(hardware="a100")
    grade(problem="retired")
    make_run(problem=arena.softmax, hardware=arena.h100)  # never graded

    records = records_of(arena)

    assert records.runs.uuid.tolist() == [str(counted.uuid)]
    assert [problem.slug for problem in records.problems] == ["gemm", "softmax"]


def test_problems_scored_by_speedup_stay_off_the_board_and_its_configurations(arena, grade):
    # An imported KernelBench model scores a speedup over eager, not a peak fraction: averaging
    # the two would let one such problem decide the ranking.
    from submissions.boards.configs import config_results
    from tests.factories import make_problem

    arena.kb = make_problem("kb-l1-19-relu", regime="speedup")
    counted = grade()
    grade(problem="kb", score=42.0)

    records = records_of(arena)

    assert records.runs.uuid.tolist() == [str(counted.uuid)]
    assert [problem.slug for problem in records.problems] == ["gemm", "softmax"]
    (h100,) = config_results(model=arena.gpt)[0].hardware
    assert h100.runs == 1 and [best.problem_slug for best in h100.best] == ["gemm", "softmax"]


def test_an_unranked_target_has_an_empty_board(arena, grade):
    grade(hardware="a100")

    stored = snapshot.refresh_board(hardware_id=arena.a100.pk)

    assert stored.data["rows"] == []
    assert stored.data["runs"]["uuid"] == []


def test_a_run_record_carries_its_outcome_figures_and_visible_speedups(arena, grade):
    run = grade(
        score=0.6,
        speedups=((2.0, 1.0), (8.0, 4.0), (0.0, None)),
        input_tokens=1000,
        output_tokens=500,
        cost_usd=1.25,
        wall_time_s=300.0,
    )

    runs = records_of(arena).runs

    assert runs.uuid[0] == str(run.uuid)
    assert runs.score[0] == 0.6
    assert (runs.speedup_eager[0], runs.speedup_compile[0]) == pytest.approx((4.0, 2.0))
    assert (runs.tokens[0], runs.cost_usd[0], runs.wall_time_s[0]) == (1500, 1.25, 300.0)
    assert runs.created[0] == run.created_at.isoformat(timespec="seconds")
    assert (runs.ok[0], runs.verdict[0], runs.failure[0]) == (True, "ok", "")


@pytest.mark.parametrize(
    ("verdict", "failure"),
    [
        ("missing_solution", "static"),
        ("forbidden", "static"),
        ("build_error", "build"),
        ("incorrect", "wrong_visible"),
        ("incorrect_hidden", "wrong_hidden"),
        ("timeout", "timeout"),
        ("timing_rejected", "crash"),
        ("resource_limit", "crash"),
        ("infra_error", "infra"),
    ],
)
def test_a_failed_run_scores_zero_and_records_its_failure_kind(grade, arena, verdict, failure):
    grade(verdict=verdict, score=0.9)

    runs = records_of(arena).runs

    assert (runs.score[0], runs.ok[0], runs.failure[0]) == (0.0, False, failure)
    assert runs.correct_visible[0] == (verdict == "incorrect_hidden")


def test_an_ok_run_without_a_score_scores_zero(arena, grade):
    grade(score=None)

    assert records_of(arena).runs.score.tolist() == [0.0]


def test_records_survive_their_stored_form(arena, grade):
    grade(score=0.4, cost_usd=None, speedups=((1.5, 0.8),))
    grade(model="claude", problem="gemm", verdict="timeout")
    records = records_of(arena)

    again = snapshot.Records.from_json(records.to_json())

    assert again.to_json() == records.to_json()
    assert again.runs.cost_usd.dtype.kind == "f"


def test_the_stored_rows_follow_the_board_arithmetic(arena, grade):
    grade(score=0.6)
    grade(score=0.4)
    grade(model="claude", verdict="build_error")
    grade(model="claude", problem="gemm", score=0.8)

    stored = snapshot.refresh_board(hardware_id=arena.h100.pk)

    rows = {row["config_key"]: row for row in stored.data["rows"]}
    gpt, claude = rows["gpt-5/codex-cli/"], rows["claude-opus-4-5/codex-cli/"]
    assert gpt["score"] == pytest.approx((0.5 + 0) / 2)
    assert (gpt["attempted"], gpt["problem_count"], gpt["runs"]) == (1, 2, 2)
    assert claude["score"] == pytest.approx((0 + 0.8) / 2)
    assert claude["pass_visible"] == 0.5
    assert gpt["config_label"] == "GPT-5 · Codex CLI"


def test_reading_a_missing_snapshot_computes_it(arena, grade):
    grade(score=0.5)

    rows, _, _, computed_at = snapshot.stored_rows(hardware=arena.h100)

    assert [row.score for row in rows] == [0.25]
    assert BoardSnapshot.objects.get(hardware=arena.h100).computed_at == computed_at


def test_a_snapshot_of_another_format_is_recomputed_on_read(arena, grade):
    grade(score=0.5)
    stale = snapshot.refresh_board(hardware_id=arena.h100.pk)
    BoardSnapshot.objects.filter(pk=stale.pk).update(
        format_version=snapshot.FORMAT_VERSION + 1, data={}
    )

    rows, _, _, computed_at = snapshot.stored_rows(hardware=arena.h100)

    assert len(rows) == 1
    assert computed_at > stale.computed_at


def test_refreshing_for_a_run_refreshes_the_board_of_its_hardware(arena, grade):
    first = snapshot.refresh_board(hardware_id=arena.h100.pk)
    run = grade(score=0.5)

    snapshot.refresh_boards_for_run(run_id=run.pk)

    fresh = BoardSnapshot.objects.get(hardware=arena.h100)
    assert fresh.computed_at > first.computed_at
    assert fresh.data["runs"]["uuid"] == [str(run.uuid)]


def test_refreshing_for_a_deleted_run_does_nothing(arena):
    snapshot.refresh_boards_for_run(run_id=987654)

    assert not BoardSnapshot.objects.exists()


def test_a_refresh_takes_as_many_queries_at_any_data_size(arena, grade, django_assert_num_queries):
    grade(score=0.5, speedups=((2.0, 1.0),))
    snapshot.refresh_board(hardware_id=arena.h100.pk)
    with CaptureQueriesContext(connection) as small:
        snapshot.refresh_board(hardware_id=arena.h100.pk)
    for n in range(6):
        grade(
            model=("gpt", "claude")[n % 2],
            problem=("softmax", "gemm")[n % 2],
            effort=str(n),
            speedups=((2.0, 1.0), (3.0, 1.5)),
        )

    with django_assert_num_queries(len(small)):
        snapshot.refresh_board(hardware_id=arena.h100.pk)


def test_a_stored_board_reads_in_one_query(arena, grade, django_assert_num_queries):
    grade(score=0.5)
    snapshot.refresh_board(hardware_id=arena.h100.pk)

    with django_assert_num_queries(1):
        snapshot.stored_rows(hardware=arena.h100)
    with django_assert_num_queries(1):
        snapshot.stored_records(hardware=arena.h100)


def test_records_keep_the_local_creation_time(arena, grade):
    run = grade(score=0.5)
    earlier = run.created_at - timedelta(days=3)
    grade(score=0.7, created=earlier)

    created = sorted(records_of(arena).runs.created.tolist())

    assert created[0] == earlier.isoformat(timespec="seconds")
