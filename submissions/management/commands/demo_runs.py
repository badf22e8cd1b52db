"""Example runs, uploaded through the same service as the API and graded on the CPU target.

On the embedded default (SQLite, eager tasks) each run is graded before the command returns:
smoke shapes under the Triton interpreter, no GPU or broker needed. With a broker configured the
runs are queued for the workers instead.
"""

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.management.base import BaseCommand, CommandError

from submissions.models import Harness, LanguageModel, Problem, Run
from submissions.services.registry import (
    EngineError,
    engine_problems,
    ensure_cpu_target,
    register_problems,
    seed_registry,
)
from submissions.services.runs import create_run
from submissions.uploads import IncomingFile, RunFiles

SAMPLES = Path(settings.BASE_DIR) / "tests" / "transcripts" / "samples"
HONEST = Path(settings.BASE_DIR) / "tests" / "runners" / "solutions"
# (harness slug, model slug, sample transcript) per example; cycled over the problems
AGENTS = [
    ("claude-code", "claude-sonnet-4-5", "claude-jsonl-edits-3fe1b6bc.jsonl"),
    ("codex-cli", "gpt-5-codex", "codex-exec-json-file-change.jsonl"),
    ("claude-code-print", "claude-opus-4-1", "claude-stream-json-task-subagent.jsonl"),
    ("codex-cli", "gpt-5", "codex-exec-json-command.jsonl"),
]
# Skips the work: returns its input, so it fails correctness (or the strict state_dict load).
LAZY_SOLUTION = """import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x, *rest):
        return x
"""


class Command(BaseCommand):
    help = "Create example runs (an honest and a failing solution per CPU-capable problem)."

    def add_arguments(self, parser):
        parser.add_argument("--problem", action="append", help="only these problem slugs")

    def handle(self, *args, problem=None, **options):
        deck = _cpu_problems(problem)
        seed_registry()
        submitter, _ = get_user_model().objects.get_or_create(username="demo")
        examples = [(slug, kind, code) for slug in deck for kind, code in _solutions(slug).items()]
        for index, (slug, kind, code) in enumerate(examples):
            run = _upload(slug, code, AGENTS[index % len(AGENTS)], submitter)
            self._report(run, kind)

    def _report(self, run: Run, kind: str) -> None:
        run.refresh_from_db()
        latest = run.evaluations.order_by("-created_at").first()
        outcome = f"{latest.verdict or latest.status}: {latest.reason[:100]}" if latest else ""
        self.stdout.write(f"{run.problem.slug:10} {kind:8} {run.status:10} {outcome}")
        self.stdout.write(f"    {run.get_absolute_url()}")


def _cpu_problems(only: list[str] | None) -> list[str]:
    try:
        infos = engine_problems()
    except EngineError as error:
        raise CommandError(str(error)) from error
    register_problems(infos=infos)  # the deck's problems; others registered stay active
    slugs = [info.slug for info in infos if info.cpu_capable and (not only or info.slug in only)]
    if not slugs:
        raise CommandError("no CPU-capable problem matches")
    return slugs


def _solutions(slug: str) -> dict[str, str]:
    honest = HONEST / slug / "honest.py"
    starter = Path(settings.BASE_DIR) / "runners" / "problems" / slug / "starter.py"
    source = honest if honest.exists() else starter
    solutions = {"failing": LAZY_SOLUTION}
    if source.exists():
        solutions = {"honest": source.read_text(encoding="utf-8")} | solutions
    return solutions


def _upload(slug: str, code: str, agent: tuple[str, str, str], submitter) -> Run:
    harness, model, sample = agent
    files = RunFiles(
        solution=IncomingFile("solution.py", ContentFile(code.encode(), name="solution.py")),
        transcripts=[IncomingFile(sample, ContentFile((SAMPLES / sample).read_bytes(), sample))],
        metadata={"demo": True},
    )
    run, _ = create_run(
        submitter=submitter,
        problem=Problem.objects.get(slug=slug),
        language_model=LanguageModel.objects.get(slug=model),
        harness=Harness.objects.get(slug=harness),
        hardware=ensure_cpu_target(),
        files=files,
    )
    return run
