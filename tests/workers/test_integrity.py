"""Integrity: each automatic flag fires on a crafted grade and stays silent on an honest one;
grades not made as the protocol requires are never published; staff verdicts and invalidation
through the API, 403 for everyone else."""

import copy

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from runners.schema import EvaluationResult
from submissions.boards.snapshot import refresh_board
from submissions.models import Annotation, HardwareTarget, Run
from submissions.services import evaluations, integrity
from tests.boards.factories import make_graded_run as make_board_run
from tests.factories import (
    make_evaluation,
    make_hardware,
    make_harness,
    make_language_model,
    make_problem,
    make_superuser,
    make_token,
    make_user,
)
from tests.workers.conftest import make_graded_run, make_solution
from transcripts.model import Event, Kind, Session

pytestmark = pytest.mark.django_db

HONEST = {
    "problem": "softmax",
    "problem_version": "v1",
    "device": "cuda",
    "verdict": "ok",
    "reason": "",
    "score": 0.4,
    "hidden_score": 0.38,
    "correct_visible": True,
    "correct_hidden": True,
    "gates": [{"name": "static", "status": "pass", "details": {"hits": [], "flags": []}}],
    "shapes": [
        {
            "set": "visible",
            "index": 0,
            "params": {"n": 1024},
            "correct": True,
            "peak_fraction": 0.4,
            "speedup_eager": 1.8,
            "speedup_compile": 1.2,
            "time": {
                "median_us": 100.0,
                "mean_us": 101.0,
                "std_us": 1.0,
                "min_us": 99.0,
                "p10_us": 99.5,
                "p90_us": 102.0,
                "n": 200,
            },
        }
    ],
    "environment": {"hardware": "h100-sxm"},
    "isolation": {"sandboxed": True},
}


def crafted(**changes) -> dict:
    result = copy.deepcopy(HONEST)
    for path, value in changes.items():
        target, *keys = path.split("__")
        node = result[target] if keys else result
        for key in keys[:-1]:
            node = node[int(key)] if key.isdigit() else node[key]
        last = keys[-1] if keys else target
        node[int(last) if last.isdigit() else last] = value
    return result


def flag_codes(result: dict, **fields) -> set[str]:
    run = make_graded_run()
    evaluation = make_evaluation(run, result=result, **fields)
    return {flag.code for flag in integrity.grade_flags(evaluation)}


def test_an_honest_grade_raises_no_flag():
    assert flag_codes(HONEST) == set()


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"shapes__0__peak_fraction": 0.97}, "near_roofline"),
        ({"shapes__0__speedup_compile": 45.0}, "large_speedup"),
        ({"correct_hidden": False}, "visible_hidden_disagree"),
        ({"hidden_score": 0.05}, "score_gap"),
        ({"shapes__0__time__p90_us": 180.0}, "timing_spread"),
        (
            {"gates__0__details__flags": [{"rule": "side_stream", "line": 7, "message": "s"}]},
            "static_flags",
        ),
        (
            {
                "verdict": "timing_rejected",
                "reason": "performance: 1 us is faster than the speed of light on H100",
            },
            "faster_than_light",
        ),
    ],
)
def test_each_flag_fires_on_its_crafted_grade(changes, code):
    assert flag_codes(crafted(**changes)) == {code}


# The static gate's flags as the engine writes them: a native source's carry its file's name.
STATIC_FLAGS = [
    {"rule": "side_stream", "line": 12, "message": "creates a CUDA stream; graded: ..."},
    {"rule": "cuda_graph", "line": 12, "message": "captures a CUDA graph; graded: ..."},
    {"rule": "build_environment", "line": 3, "message": "sets TORCH_CUDA_ARCH_LIST; graded: ..."},
    {"file": "kernel.cu", "rule": "side_stream", "line": 40, "message": "cudaStreamCreate"},
]


def test_static_flags_of_a_graded_solution_point_at_their_lines():
    run = make_graded_run(published=True)
    make_evaluation(run, result=crafted(gates__0__details__flags=STATIC_FLAGS))
    integrity.refresh_grade_flags(run=Run.objects.get(pk=run.pk))
    (flag,) = Run.objects.get(pk=run.pk).flags
    assert flag["code"] == "static_flags"
    assert "build_environment, cuda_graph, side_stream" in flag["message"]
    assert flag["evidence"] == [
        {"kind": "lines", "start": 12, "end": 12},
        {"kind": "lines", "start": 3, "end": 3},
        {"kind": "lines", "start": 40, "end": 40, "file": "kernel.cu"},
    ]


def test_the_run_page_links_static_flags_to_solution_and_native_source_lines(
    client, django_assert_max_num_queries
):
    run = make_graded_run(published=True)
    make_evaluation(run, result=crafted(gates__0__details__flags=STATIC_FLAGS))
    integrity.refresh_grade_flags(run=Run.objects.get(pk=run.pk))
    with django_assert_max_num_queries(7):  # as many as a run without flags
        html = client.get(run.get_absolute_url()).content.decode()
    assert "static flags" in html and 'href="#L-12"' in html
    assert 'href="#kernel.cu-L-40">kernel.cu lines 40' in html


def test_refusing_hits_on_a_failed_static_gate_raise_no_integrity_flag():
    refused = {"name": "static", "status": "fail", "details": {"hits": STATIC_FLAGS[:1]}}
    assert flag_codes(crafted(gates__0=refused, verdict="forbidden")) == set()


def test_an_untrusted_grade_is_flagged():
    assert flag_codes(HONEST, trusted=False) == {"untrusted_grade"}


@pytest.mark.parametrize("directive", ["unsandboxed", "gpu=a100"])
def test_a_grade_made_outside_the_protocol_is_never_published(
    directive, fake_engine, django_capture_on_commit_callbacks, settings
):
    settings.ARENA_PUBLISH_ON_GRADE = True
    gpu = make_hardware("fake-gpu", queue_name="cpu", device=HardwareTarget.Device.CUDA)
    run = make_graded_run(f"# fake: verdict=ok\n# fake: {directive}\n", hardware=gpu)
    Run.objects.filter(pk=run.pk).update(published=False)
    with django_capture_on_commit_callbacks(execute=True):
        evaluations.enqueue_evaluation(run=run)
    run.refresh_from_db()
    assert not run.headline_evaluation.trusted
    assert not run.published
    assert [flag["code"] for flag in run.flags] == ["untrusted_grade"]


def test_a_static_refusal_on_a_gpu_target_is_a_trusted_grade():
    # The static gate refuses before any code runs: no sandbox, no GPU, nothing to distrust.
    refused = crafted(
        verdict="forbidden",
        score=0.0,
        gates=[{"name": "static", "status": "fail", "details": {"hits": [], "flags": []}}],
        shapes=[],
        environment={},
        isolation={},
    )
    gpu = make_hardware("h100-like", queue_name="gpu.h100-like", device=HardwareTarget.Device.CUDA)
    result = EvaluationResult.from_dict(refused)
    assert integrity.grade_provenance(result, hardware=gpu) == []
    unsandboxed = EvaluationResult.from_dict(refused | {"gates": HONEST["gates"]})
    assert integrity.grade_provenance(unsandboxed, hardware=gpu) == [
        "the candidate did not run in the sandbox",
        f"graded on an unknown GPU, not on {gpu.gpu_model}",
    ]


def test_near_identical_solutions_of_other_submitters_are_flagged():
    code = "import torch\n\n\ndef f(x):\n    '''doc'''\n    return x + 1\n"
    reformatted = "import torch\ndef f(x):\n    return (x + 1)  # same tree\n"
    first = make_graded_run(submitter=make_user("alice"))
    Run.objects.filter(pk=first.pk).update(solution=make_solution(code))
    second = make_graded_run(submitter=make_user("bob"), problem=first.problem)
    second.solution = make_solution(reformatted)
    Run.objects.filter(pk=second.pk).update(solution=second.solution)
    integrity.refresh_solution_flags(run=Run.objects.get(pk=second.pk))
    (flag,) = Run.objects.get(pk=second.pk).flags
    assert flag["code"] == "similar_solution"
    assert flag["evidence"] == [{"kind": "run", "run": str(first.uuid)}]

    # another submitter's unpublished twin is counted, never named to the uploader
    Run.objects.filter(pk=first.pk).update(published=False)
    integrity.refresh_solution_flags(run=Run.objects.get(pk=second.pk))
    (flag,) = Run.objects.get(pk=second.pk).flags
    assert flag["evidence"] == [] and str(first.uuid) not in flag["message"]
    assert flag["message"].endswith("1 earlier run(s) of other submitters, 1 of them unpublished "
                                    "and not named.")  # fmt: skip


def test_a_prompt_other_than_the_published_one_is_flagged():
    import hashlib

    run = make_graded_run()
    run.problem.statement = "# Row sum\n\nWrite a kernel.\n"
    run.problem.save(update_fields=["statement"])
    published = hashlib.sha256(run.problem.statement.encode()).hexdigest()
    for reported, flagged in (
        ("", False),
        (published, False),
        (f"sha256:{published}", False),
        ("0" * 64, True),
    ):
        Run.objects.filter(pk=run.pk).update(prompt_hash=reported)
        integrity.refresh_solution_flags(run=Run.objects.get(pk=run.pk))
        codes = [flag["code"] for flag in Run.objects.get(pk=run.pk).flags]
        assert codes == (["prompt_differs"] if flagged else []), reported
    (flag,) = Run.objects.get(pk=run.pk).flags
    assert f"reported 000000000000, published {published[:12]}" in flag["message"]


def test_tool_calls_reaching_outside_the_workspace_are_flagged_with_permalinks():
    events = [
        Event(kind=Kind.TOOL_CALL, id="t1", tool_name="Read", file_path="/work/solution.py"),
        Event(
            kind=Kind.TOOL_CALL,
            id="t:2",
            tool_name="Bash",
            arguments={"cmd": "cat ../../hidden.yaml"},
        ),
    ]
    run = make_graded_run()
    integrity.refresh_transcript_flags(
        run=run, session=Session(id="s", harness="h", format="f", events=events)
    )
    (flag,) = Run.objects.get(pk=run.pk).flags
    assert flag["code"] == "reads_outside_workspace"
    assert flag["evidence"] == [{"kind": "event", "event": "e-t_2"}]
    integrity.refresh_transcript_flags(run=run, session=Session(id="s", harness="h", format="f"))
    assert Run.objects.get(pk=run.pk).flags == []


def api_as(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {make_token(user)}")
    return api


def test_staff_annotate_with_evidence_and_everyone_sees_the_history():
    run = make_graded_run(published=True)
    url = reverse("api:run-annotate", kwargs={"run_id": run.uuid})
    evidence = [{"kind": "event", "event": "e-t_2"}, {"kind": "lines", "start": 3, "end": 9}]
    staff = api_as(make_superuser())
    made = staff.post(
        url,
        {"verdict": "suspicious", "comment": "<b>reads</b>", "evidence": evidence},
        format="json",
    )
    assert made.status_code == 201, made.content
    staff.post(url, {"verdict": "legit"}, format="json")
    detail = APIClient().get(reverse("api:run-detail", kwargs={"uuid": run.uuid})).json()
    assert [a["verdict"] for a in detail["annotations"]] == ["legit", "suspicious"]
    assert detail["annotations"][1]["evidence"] == evidence


def test_bad_evidence_is_refused_and_nothing_is_stored():
    run = make_graded_run()
    url = reverse("api:run-annotate", kwargs={"run_id": run.uuid})
    response = api_as(make_superuser()).post(
        url,
        {"verdict": "hack", "evidence": [{"kind": "lines", "start": 9, "end": 2}]},
        format="json",
    )
    assert response.status_code == 400
    assert "is neither a transcript event" in response.json()["detail"]
    assert not Annotation.objects.exists()


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("run-annotate", {"verdict": "hack"}),
        ("run-invalidate", {"reason": "cheat"}),
        ("run-restore", {}),
    ],
)
def test_only_staff_may_annotate_invalidate_or_restore(name, body):
    run = make_graded_run(published=True)
    url = reverse(f"api:{name}", kwargs={"run_id": run.uuid})
    assert api_as(make_user("someone")).post(url, body, format="json").status_code == 403
    assert APIClient().post(url, body, format="json").status_code in (401, 403)
    run.refresh_from_db()
    assert run.invalidated_at is None and not Annotation.objects.exists()


def test_only_staff_see_the_review_queue():
    url = reverse("api:review-queue")
    assert api_as(make_user("someone")).get(url).status_code == 403
    assert api_as(make_superuser()).get(url).status_code == 200


def test_the_review_queue_holds_flagged_unreviewed_runs_oldest_first():
    older, newer, quiet = make_graded_run(), make_graded_run(), make_graded_run()
    flagged = [{"code": "score_gap", "message": "gap", "source": "grade"}]
    Run.objects.filter(pk__in=[older.pk, newer.pk]).update(flags=flagged)
    queue = api_as(make_superuser()).get(reverse("api:review-queue")).json()["results"]
    assert [row["id"] for row in queue] == [str(older.uuid), str(newer.uuid)]
    Annotation.objects.create(run=older, author=make_superuser("boss"), verdict="legit")
    queue = api_as(make_superuser("other")).get(reverse("api:review-queue")).json()["results"]
    assert [row["id"] for row in queue] == [str(newer.uuid)]
    assert str(quiet.uuid) not in str(queue)


def test_the_admin_review_queue_records_a_one_click_verdict(client):
    run = make_graded_run(published=True)
    Run.objects.filter(pk=run.pk).update(flags=[{"code": "x", "message": "m", "source": "grade"}])
    client.force_login(make_superuser())
    page = client.get(reverse("admin:submissions_runforreview_changelist")).content.decode()
    assert str(run.uuid)[:8] in page
    client.post(reverse("admin:submissions_review_verdict", args=[run.pk, "hack"]))
    run.refresh_from_db()
    assert run.invalidated_at is not None and run.annotations.get().verdict == "hack"


def test_the_admin_review_queue_is_closed_to_non_staff(client):
    client.force_login(make_user("someone"))
    response = client.get(reverse("admin:submissions_runforreview_changelist"))
    assert response.status_code == 302  # to the admin login


def test_the_run_page_shows_flags_reviews_and_the_invalidation_escaped(client):
    run = make_graded_run(published=True)
    flag = {"code": "score_gap", "message": "Held-out score 80% below", "source": "grade"}
    Run.objects.filter(pk=run.pk).update(flags=[flag])
    staff = make_superuser()
    Annotation.objects.create(
        run=run,
        author=staff,
        verdict="hack",
        comment="<script>alert(1)</script>",
        evidence=[{"kind": "event", "event": "e-t_2"}, {"kind": "lines", "start": 4, "end": 6}],
    )
    api_as(staff).post(
        reverse("api:run-invalidate", kwargs={"run_id": run.uuid}),
        {"reason": "<b>caches outputs</b>"},
        format="json",
    )
    html = client.get(run.get_absolute_url()).content.decode()
    assert "Invalidated" in html and "&lt;b&gt;caches outputs&lt;/b&gt;" in html
    assert "score gap" in html and "Held-out score 80% below" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert f"{reverse('submissions:run-transcript', kwargs={'run_id': run.uuid})}#e-t_2" in html
    assert 'href="#L-4"' in html


def test_an_invalidated_run_leaves_every_board_and_export_and_comes_back_restored(
    client, django_capture_on_commit_callbacks
):
    h100 = make_hardware("h100-sxm")
    problem = make_problem("softmax")
    run = make_board_run(
        problem=problem,
        model=make_language_model("gpt-5"),
        harness=make_harness("codex-cli"),
        hardware=h100,
        score=0.7,
    )
    refresh_board(hardware_id=h100.pk)
    urls = [
        reverse("submissions:board", kwargs={"hardware": "h100-sxm"}),
        reverse("submissions:matrix", kwargs={"hardware": "h100-sxm"}),
        reverse("submissions:problem-detail", kwargs={"slug": "softmax"}) + "?hardware=h100-sxm",
        reverse("api:board", kwargs={"hardware": "h100-sxm"}) + "?format=csv",
        reverse("api:board-problem", kwargs={"hardware": "h100-sxm", "problem": "softmax"}),
    ]

    def shown() -> list[bool]:
        pages = [client.get(url).content.decode() for url in urls]
        # a board row links its model (CSV: names it); matrix cells and run lists link the run
        marks = (str(run.uuid), "/models/gpt-5/", "gpt-5,")
        return [any(mark in page for mark in marks) for page in pages]

    assert all(shown())
    staff = api_as(make_superuser())
    with_commit = {"run_id": run.uuid}
    with django_capture_on_commit_callbacks(execute=True):
        staff.post(
            reverse("api:run-invalidate", kwargs=with_commit), {"reason": "cheat"}, format="json"
        )
    assert not any(shown())
    assert client.get(run.get_absolute_url()).status_code == 200  # still readable
    with django_capture_on_commit_callbacks(execute=True):
        staff.post(reverse("api:run-restore", kwargs=with_commit), format="json")
    assert all(shown())


def test_the_admin_review_queue_lists_the_oldest_first(client):
    older, newer = make_graded_run(), make_graded_run()
    flagged = [{"code": "x", "message": "m", "source": "grade"}]
    Run.objects.filter(pk__in=[older.pk, newer.pk]).update(flags=flagged)
    client.force_login(make_superuser())
    response = client.get(reverse("admin:submissions_runforreview_changelist"))
    assert [run.pk for run in response.context["cl"].result_list] == [older.pk, newer.pk]
