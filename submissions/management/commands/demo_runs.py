"""Example runs, uploaded through the same service as the API and graded on the CPU target.

On the embedded default (SQLite, eager tasks) each run is graded before the command returns:
smoke shapes under the Triton interpreter, no GPU or broker needed. With a broker configured the
runs are queued for the workers instead.

Each run carries the transcript of a real CLI session (Claude Code or Codex) whose scripted
model wrote its solution: `bench/demo_transcripts.py` records them into TRANSCRIPTS; the runs'
model is that scripted one.
"""

import tarfile
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.management.base import BaseCommand, CommandError

from submissions.models import Harness, Problem, Run
from submissions.services.accounts import service_account
from submissions.services.registry import (
    EngineError,
    engine_problems,
    ensure_cpu_target,
    register_model,
    register_problems,
    seed_registry,
)
from submissions.services.runs import create_run
from submissions.uploads import IncomingFile, RunFiles

HONEST = Path(settings.BASE_DIR) / "tests" / "runners" / "solutions"
TRANSCRIPTS = Path(__file__).resolve().parents[2] / "demo" / "transcripts.tar.gz"
HARNESSES = ("claude-code", "codex-cli")
MODEL = {
    "slug": "scripted-demo",
    "display_name": "Scripted model (demo)",
    "provider": "Kernel Arena",
}
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
        try:
            register_problems(infos=engine_problems())  # the deck's; others registered stay
        except EngineError as error:
            raise CommandError(str(error)) from error
        seed_registry()
        model = register_model(**MODEL)
        submitter = service_account("demo")
        recorded = _recorded_transcripts()
        for index, (slug, kind, code) in enumerate(examples(problem)):
            harness, transcripts = recorded.get(f"{slug}-{kind}", (harness_for(index), []))
            harness = Harness.objects.get(slug=harness)
            if not transcripts:
                self.stderr.write(f"{slug} {kind}: no transcript in {TRANSCRIPTS.name} (bench/)")
            run = _upload(slug, code, harness, model, transcripts, submitter)
            self._report(run, kind)

    def _report(self, run: Run, kind: str) -> None:
        run.refresh_from_db()
        latest = run.evaluations.order_by("-created_at").first()
        outcome = f"{latest.verdict or latest.status}: {latest.reason[:100]}" if latest else ""
        self.stdout.write(f"{run.problem.slug:10} {kind:8} {run.status:10} {outcome}")
        self.stdout.write(f"    {run.get_absolute_url()}")


def harness_for(index: int) -> str:
    """Alternating per example and per problem, so each CLI writes honest and failing runs."""
    return HARNESSES[(index + index // 2) % len(HARNESSES)]


def examples(only: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(problem slug, kind, solution code): an honest and a failing solution per CPU-capable
    problem of the deck, in the deck's order (the transcripts are recorded in this order)."""
    try:
        infos = engine_problems()
    except EngineError as error:
        raise CommandError(str(error)) from error
    slugs = [info.slug for info in infos if info.cpu_capable and (not only or info.slug in only)]
    if not slugs:
        raise CommandError("no CPU-capable problem matches")
    return [(slug, kind, code) for slug in slugs for kind, code in _solutions(slug).items()]


def _recorded_transcripts() -> dict[str, tuple[str, list[IncomingFile]]]:
    """The recorded sessions by example (`<problem>-<kind>`): the harness that ran, its files."""
    found: dict[str, tuple[str, list[IncomingFile]]] = {}
    if not TRANSCRIPTS.is_file():
        return found
    with tarfile.open(TRANSCRIPTS, "r:gz") as bundle:
        for member in bundle.getmembers():
            if not member.isfile():
                continue
            example, harness, name = PurePosixPath(member.name).parts
            data = bundle.extractfile(member).read()
            incoming = IncomingFile(name, ContentFile(data, name=name))
            found.setdefault(example, (harness, []))[1].append(incoming)
    return found


def _solutions(slug: str) -> dict[str, str]:
    honest = HONEST / slug / "honest.py"
    starter = Path(settings.BASE_DIR) / "runners" / "problems" / slug / "starter.py"
    source = honest if honest.exists() else starter
    solutions = {"failing": LAZY_SOLUTION}
    if source.exists():
        solutions = {"honest": source.read_text(encoding="utf-8")} | solutions
    return solutions


def _upload(slug: str, code: str, harness, model, transcripts, submitter) -> Run:
    files = RunFiles(
        solution=IncomingFile("solution.py", ContentFile(code.encode(), name="solution.py")),
        transcripts=transcripts,
        metadata={"demo": True},
    )
    run, _ = create_run(
        submitter=submitter,
        problem=Problem.objects.get(slug=slug),
        language_model=model,
        harness=harness,
        hardware=ensure_cpu_target(),
        files=files,
        transcript_required=bool(transcripts),
    )
    return run
