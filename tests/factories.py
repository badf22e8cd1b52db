"""Small builders for test rows; each fills only what a test does not care about."""

import hashlib
import uuid

from django.contrib.auth import get_user_model
from django.utils import timezone

from submissions.models import (
    Evaluation,
    HardwareTarget,
    Harness,
    LanguageModel,
    Problem,
    Run,
    ShapeResult,
)
from submissions.models.evaluations import SHAPE_MEASURES
from submissions.services import evaluations
from submissions.services.tokens import issue_token


def make_user(username: str = "alice", **fields):
    return get_user_model().objects.create_user(username=username, password="pw-12345!", **fields)


def make_superuser(username: str = "admin"):
    return get_user_model().objects.create_superuser(username=username, password="pw-12345!")


def make_token(user) -> str:
    _, plaintext = issue_token(user=user, name="tests")
    return plaintext


def make_problem(slug: str = "softmax", **fields) -> Problem:
    defaults = {
        "title": slug.replace("_", " ").title(),
        "category": Problem.Category.PYTORCH_TO_KERNEL,
        "regime": "memory",
        "version": hashlib.sha256(slug.encode()).hexdigest(),
        "visible_count": 3,
        "hidden_count": 2,
        "synced_at": timezone.now(),
    }
    return Problem.objects.create(slug=slug, **(defaults | fields))


def make_language_model(slug: str = "claude-sonnet-4-5", **fields) -> LanguageModel:
    defaults = {"display_name": slug.replace("-", " ").title(), "provider": "Anthropic"}
    return LanguageModel.objects.create(slug=slug, **(defaults | fields))


def make_harness(slug: str = "claude-code", **fields) -> Harness:
    return Harness.objects.create(slug=slug, **({"name": "Claude Code", "version": "2.0"} | fields))


def make_hardware(slug: str = "h100-sxm", **fields) -> HardwareTarget:
    defaults = {
        "name": "NVIDIA H100 SXM",
        "queue_name": f"gpu.{slug}",
        "gpu_model": slug,
        "is_ranked": True,
    }
    return HardwareTarget.objects.create(slug=slug, **(defaults | fields))


def make_registry() -> dict:
    """One of each registry entry, keyed by the upload form's field names."""
    return {
        "problem": make_problem(),
        "model": make_language_model(),
        "harness": make_harness(),
        "hardware": make_hardware(),
    }


def make_run(*, submitter=None, published: bool = True, **fields) -> Run:
    problem = fields.pop("problem", None) or Problem.objects.first() or make_problem()
    defaults = {
        "language_model": lambda: LanguageModel.objects.first() or make_language_model(),
        "harness": lambda: Harness.objects.first() or make_harness(),
        "hardware": lambda: HardwareTarget.objects.filter(device="cuda").first() or make_hardware(),
        "problem_version": lambda: problem.version,
        "content_key": lambda: uuid.uuid4().hex,
    }
    fields = {name: make() for name, make in defaults.items() if name not in fields} | fields
    return Run.objects.create(problem=problem, submitter=submitter, published=published, **fields)


def make_result(*, hidden_params: dict | None = None, verdict: str = "ok") -> dict:
    """An EvaluationResult dict with one visible and one hidden shape and every gate passed."""
    hidden_params = hidden_params or {"batch": 4099117, "dim": 12289333}
    shapes = [
        {"set": "visible", "index": 0, "params": {"batch": 8, "dim": 1024}, "correct": True},
        {"set": "hidden", "index": 0, "params": hidden_params, "correct": True},
    ]
    gates = [
        {"name": "static", "status": "pass", "details": {"hits": []}},
        {"name": "correct_visible", "status": "pass", "details": {"shapes": [shapes[0]["params"]]}},
        {"name": "correct_hidden", "status": "pass", "details": {"params": hidden_params}},
        {"name": "performance", "status": "pass", "details": {"worst": hidden_params}},
    ]
    return {
        "problem": "softmax",
        "problem_version": "v1",
        "device": "cuda",
        "verdict": verdict,
        "reason": "",
        "score": 0.42,
        "correct_visible": True,
        "correct_hidden": True,
        "gates": gates,
        "shapes": shapes,
    }


def make_evaluation(run: Run, *, result: dict | None = None, **fields) -> Evaluation:
    result = make_result() if result is None else result
    defaults = {
        "hardware": run.hardware,
        "status": Evaluation.Status.DONE,
        "verdict": result.get("verdict", "ok"),
        "score": result.get("score"),
        "correct_visible": result.get("correct_visible"),
        "correct_hidden": result.get("correct_hidden"),
        "result": result,
        "finished_at": timezone.now(),
    }
    evaluation = Evaluation.objects.create(run=run, **(defaults | fields))
    for shape in result.get("shapes", []):
        make_shape_result(evaluation, **shape)
    evaluations.refresh_run(run_id=run.pk)  # as the services do when an evaluation changes
    return evaluation


def make_shape_result(evaluation: Evaluation, **shape) -> ShapeResult:
    measures = {name: shape[name] for name in SHAPE_MEASURES if name in shape}
    return ShapeResult.objects.create(
        evaluation=evaluation,
        set=shape["set"],
        index=shape["index"],
        params=shape["params"],
        **({"median_us": 12.5, "peak_fraction": 0.4} | measures),
    )
