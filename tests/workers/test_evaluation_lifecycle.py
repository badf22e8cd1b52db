"""Evaluation services end to end in-process: eager tasks, the fake engine, the default database."""

from datetime import timedelta

import pytest
from django.utils import timezone

from submissions import tasks
from submissions.models import BaselineTiming, Evaluation, HardwareTarget, Run, ShapeResult
from submissions.services import evaluations
from tests.factories import make_hardware, make_problem, make_result
from tests.workers.conftest import make_cpu_hardware, make_graded_run

pytestmark = pytest.mark.django_db


def evaluate(run, capture, **fields) -> Evaluation:
    with capture(execute=True):
        evaluation = evaluations.create_evaluation(run=run, **fields)
    evaluation.refresh_from_db()
    return evaluation


@pytest.fixture
def sent(monkeypatch) -> list[tuple[int, str]]:
    messages = []

    def record(*, kwargs, queue, priority=None):
        messages.append((kwargs["evaluation_id"], queue))

    monkeypatch.setattr(tasks.evaluate, "apply_async", record)
    return messages


def test_an_evaluation_is_sent_to_its_hardware_queue_only_after_commit(
    sent, django_capture_on_commit_callbacks
):
    run = make_graded_run(hardware=make_cpu_hardware(queue="gpu.test-h100"))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        evaluation = evaluations.create_evaluation(run=run)
        assert sent == []
    assert len(callbacks) == 1
    assert sent == [(evaluation.pk, "gpu.test-h100")]
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED


def test_a_queued_run_is_graded_and_the_run_shows_evaluated(
    fake_engine, django_capture_on_commit_callbacks
):
    run = make_graded_run()
    evaluation = evaluate(run, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert (evaluation.status, evaluation.verdict, run.status) == ("done", "ok", "evaluated")
    assert evaluation.attempts == 1
    assert evaluation.engine_version == "fake-1"
    assert evaluation.environment["hostname"] == "fake"
    assert evaluation.worker_host and evaluation.finished_at >= evaluation.started_at
    assert evaluation.result["shapes"][0]["params"] == {"rows": 4, "cols": 33}
    shape = ShapeResult.objects.get(evaluation=evaluation)
    assert (shape.set, shape.median_us, shape.correct) == ("smoke", 10.0, True)


def test_non_finite_numbers_in_a_result_are_stored_as_null(
    fake_engine, django_capture_on_commit_callbacks
):
    run = make_graded_run("# fake: verdict=incorrect\n# fake: nan\n")
    evaluation = evaluate(run, django_capture_on_commit_callbacks)
    assert (evaluation.status, evaluation.verdict) == ("done", "incorrect")
    assert evaluation.result["shapes"][0]["max_abs_err"] is None
    assert ShapeResult.objects.get(evaluation=evaluation).max_abs_err is None


def test_a_duplicate_delivery_grades_nothing_twice(fake_engine, django_capture_on_commit_callbacks):
    evaluation = evaluate(make_graded_run(), django_capture_on_commit_callbacks)
    tasks.evaluate(evaluation_id=evaluation.pk)
    tasks.evaluate.apply(kwargs={"evaluation_id": evaluation.pk})
    assert len(fake_engine.lines("start")) == 1
    assert ShapeResult.objects.filter(evaluation=evaluation).count() == 1


def test_a_second_claim_of_the_same_evaluation_finds_nothing(sent):
    evaluation = evaluations.create_evaluation(run=make_graded_run())
    first = evaluations.claim(evaluation_id=evaluation.pk)
    assert first == evaluations.Claim(evaluation.pk, 1)
    assert evaluations.claim(evaluation_id=evaluation.pk) is None
    assert Run.objects.get(pk=evaluation.run_id).status == Run.Status.EVALUATING


def test_a_stale_attempt_cannot_overwrite_the_attempt_that_replaced_it(sent, fake_engine):
    evaluation = evaluations.create_evaluation(run=make_graded_run())
    stale = evaluations.claim(evaluation_id=evaluation.pk)
    evaluations.sweep(now=timezone.now() + timedelta(hours=1))
    fresh = evaluations.claim(evaluation_id=evaluation.pk)
    result = _result("incorrect")
    assert evaluations.record_result(stale, result) is False
    assert evaluations.heartbeat(stale) is False
    assert evaluations.record_result(fresh, _result("ok")) is True
    assert evaluations.record_result(fresh, result) is False
    evaluation.refresh_from_db()
    assert (evaluation.verdict, evaluation.attempts) == ("ok", 2)


def test_a_candidate_failure_is_a_result_not_a_retry(
    fake_engine, django_capture_on_commit_callbacks
):
    run = make_graded_run("# fake: verdict=incorrect\n")
    evaluation = evaluate(run, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert (evaluation.status, evaluation.verdict, evaluation.attempts) == ("done", "incorrect", 1)
    assert evaluation.reason == "fake incorrect"
    assert run.status == Run.Status.EVALUATED


def test_an_engine_crash_is_retried_then_ends_as_infra_error(
    fake_engine, settings, django_capture_on_commit_callbacks
):
    settings.ARENA_EVAL_MAX_ATTEMPTS = 2
    run = make_graded_run("# fake: crash\n")
    evaluation = evaluate(run, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert (evaluation.status, evaluation.verdict, evaluation.attempts) == (
        "error",
        "infra_error",
        2,
    )
    assert "crashed on purpose" in evaluation.reason
    assert len(fake_engine.lines("start")) == 2
    assert run.status == Run.Status.FAILED


def test_the_sweeper_takes_back_expired_leases_and_resends_lost_messages(sent):
    hardware = make_cpu_hardware(queue="gpu.sweep")
    running = evaluations.create_evaluation(run=make_graded_run(hardware=hardware))
    evaluations.claim(evaluation_id=running.pk)
    evaluations.create_evaluation(run=make_graded_run(hardware=hardware))  # its message was lost
    fresh = evaluations.create_evaluation(run=make_graded_run(hardware=hardware))
    Evaluation.objects.filter(pk=fresh.pk).update(lease_expires_at=timezone.now() + timedelta(1))
    later = timezone.now() + timedelta(seconds=700)
    report = evaluations.sweep(now=later)
    assert report == evaluations.SweepReport(requeued=1, resent=1, failed=0)
    assert Evaluation.objects.get(pk=running.pk).status == "queued"
    assert evaluations.sweep(now=later) == evaluations.SweepReport()


def test_the_sweeper_starts_grading_runs_whose_upload_never_queued_it(
    sent, django_capture_on_commit_callbacks
):
    forgotten = make_graded_run()
    with django_capture_on_commit_callbacks(execute=True):
        report = evaluations.sweep(now=timezone.now() + timedelta(seconds=700))
    assert report.started == 1
    evaluation = forgotten.evaluations.get()
    assert (evaluation.trigger, evaluation.status) == ("sweeper", "queued")
    assert sent == [(evaluation.pk, forgotten.hardware.queue_name)]
    assert evaluations.sweep(now=timezone.now() + timedelta(seconds=700)).started == 0


def test_the_sweeper_gives_up_after_the_last_attempt(sent, settings):
    settings.ARENA_EVAL_MAX_ATTEMPTS = 1
    evaluation = evaluations.create_evaluation(run=make_graded_run())
    evaluations.claim(evaluation_id=evaluation.pk)
    report = evaluations.sweep(now=timezone.now() + timedelta(hours=1))
    evaluation.refresh_from_db()
    assert report.failed == 1
    assert (evaluation.status, evaluation.verdict) == ("error", "infra_error")
    assert "stopped heartbeating" in evaluation.reason
    assert Run.objects.get(pk=evaluation.run_id).status == Run.Status.FAILED


def gpu_target():
    """A GPU target served in-process by the fake engine (reference timings are cached on GPUs
    only; CPU timings are measured every time)."""
    return make_hardware("fake-gpu", queue_name="cpu", device=HardwareTarget.Device.CUDA)


def test_baselines_measured_once_are_reused_by_the_next_grading(
    fake_engine, django_capture_on_commit_callbacks
):
    run = make_graded_run(hardware=gpu_target(), problem=make_problem("row_sum", version="v1"))
    first = evaluate(run, django_capture_on_commit_callbacks)
    stored = BaselineTiming.objects.get()
    assert (stored.shape_key, stored.gpu_model, stored.torch_version) == (
        "cols=33,rows=4",
        "fake-gpu",
        "0.0-fake",
    )
    assert stored.timing_protocol == 2
    again = evaluate(run, django_capture_on_commit_callbacks, trigger="reevaluate")
    assert first.result["shapes"][0]["baseline_cached"] is False
    assert again.result["shapes"][0]["baseline_cached"] is True
    assert BaselineTiming.objects.count() == 1


def test_baselines_of_an_older_timing_protocol_are_measured_again(
    fake_engine, django_capture_on_commit_callbacks
):
    run = make_graded_run(hardware=gpu_target(), problem=make_problem("row_sum", version="v1"))
    BaselineTiming.objects.create(
        problem_version="v1",
        shape_key="cols=33,rows=4",
        gpu_model="fake-gpu",
        torch_version="0.0-fake",
        timing_protocol=1,
        eager={
            "median_us": 99.0,
            "mean_us": 99.0,
            "std_us": 0,
            "min_us": 99.0,
            "p10_us": 99.0,
            "p90_us": 99.0,
            "n": 50,
        },
    )
    evaluation = evaluate(run, django_capture_on_commit_callbacks)
    assert evaluation.result["shapes"][0]["baseline_cached"] is False
    assert sorted(BaselineTiming.objects.values_list("timing_protocol", flat=True)) == [1, 2]


def test_a_message_for_a_deleted_evaluation_is_logged_and_dropped(caplog):
    tasks.evaluate(evaluation_id=987654)
    assert "987654 is gone" in caplog.text


def test_the_first_grading_publishes_the_run_when_the_deployment_says_so(
    fake_engine, settings, django_capture_on_commit_callbacks
):
    settings.ARENA_PUBLISH_ON_GRADE = True
    run = make_graded_run(published=False)
    evaluate(run, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert run.published
    run.published = False
    run.save()
    evaluate(run, django_capture_on_commit_callbacks, trigger="reevaluate")
    run.refresh_from_db()
    assert not run.published


def test_graded_runs_wait_for_review_when_the_deployment_says_so(
    fake_engine, settings, django_capture_on_commit_callbacks
):
    settings.ARENA_PUBLISH_ON_GRADE = False
    run = make_graded_run(published=False)
    evaluate(run, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert not run.published


def _result(verdict: str):
    from runners.schema import EvaluationResult

    return EvaluationResult(problem="softmax", problem_version="v1", device="cuda", verdict=verdict)


def test_a_baseline_key_of_another_engine_version_is_not_cached_and_fails_nothing(caplog):
    from runners.schema import EvaluationResult, TimingStats
    from submissions.services.engine import cached_baselines, store_baselines

    result = EvaluationResult.from_dict(make_result())
    eager = {
        "median_us": 9.0,
        "mean_us": 9.0,
        "std_us": 0.0,
        "min_us": 9.0,
        "p10_us": 9.0,
        "p90_us": 9.0,
        "n": 50,
    }
    keys = ["v1:batch=8,dim=1024:h100-sxm:2.11.0", "v1:batch=8,dim=1024:NVIDIA: X:2.11.0:t2"]
    for shape, key in zip(result.shapes, keys, strict=True):
        shape.baseline_key, shape.baseline_eager = key, TimingStats.from_dict(eager)
    assert store_baselines(result) == 1  # the 0.1-era key (no protocol) is skipped
    assert "not understood" in caplog.text
    assert list(cached_baselines(problem_version="v1")) == [keys[1]]  # a ':' in a GPU name too


def test_reference_timings_measured_on_a_cpu_are_never_cached(
    fake_engine, django_capture_on_commit_callbacks
):
    run = make_graded_run(problem=make_problem("row_sum", version="v1"))
    first = evaluate(run, django_capture_on_commit_callbacks)
    again = evaluate(run, django_capture_on_commit_callbacks, trigger="reevaluate")
    assert [e.result["shapes"][0]["baseline_cached"] for e in (first, again)] == [False, False]
    assert not BaselineTiming.objects.exists()


def test_the_sweeper_sends_again_a_transcript_parsing_the_broker_lost(monkeypatch):
    from submissions.services import queue as task_queue

    sent = []
    monkeypatch.setattr(task_queue, "enqueue", lambda name, **kw: sent.append((name, kw)))
    stalled, fresh = make_graded_run(), make_graded_run()
    parsed = make_graded_run()
    Run.objects.filter(pk=parsed.pk).update(transcript_status=Run.TranscriptStatus.PARSED)
    Run.objects.filter(pk__in=[stalled.pk, parsed.pk]).update(
        created_at=timezone.now() - timedelta(hours=1)
    )
    tasks.sweep_evaluations()
    assert (task_queue.PROCESS_TRANSCRIPT, {"run_id": stalled.pk}) in sent
    assert not any(kw.get("run_id") == fresh.pk for name, kw in sent)


def test_a_stalled_transcript_has_one_resend_in_flight_and_a_last_one(monkeypatch, settings):
    from submissions.services import queue as task_queue

    sent = []
    monkeypatch.setattr(task_queue, "enqueue", lambda name, **kw: sent.append(kw["run_id"]))
    stalled = make_graded_run()
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Run.objects.filter(pk=stalled.pk).update(created_at=an_hour_ago)

    for _ in range(3):  # sweeps in a row: the resend is in flight
        tasks.sweep_evaluations()
    assert sent == [stalled.pk]

    for _ in range(settings.ARENA_EVAL_MAX_ATTEMPTS - 1):  # each resend lost in turn
        Run.objects.filter(pk=stalled.pk).update(transcript_resent_at=an_hour_ago)
        tasks.sweep_evaluations()
    assert sent == [stalled.pk] * settings.ARENA_EVAL_MAX_ATTEMPTS

    Run.objects.filter(pk=stalled.pk).update(transcript_resent_at=an_hour_ago)
    tasks.sweep_evaluations()
    run = Run.objects.get(pk=stalled.pk)
    assert len(sent) == settings.ARENA_EVAL_MAX_ATTEMPTS  # no more
    assert run.transcript_status == Run.TranscriptStatus.FAILED
    assert run.transcript_error == (
        f"the transcript's parsing did not finish in {settings.ARENA_EVAL_MAX_ATTEMPTS + 1} tries"
    )
