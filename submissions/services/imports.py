"""Runs another benchmark published, imported as runs of ours (``manage.py import_runs``) and
graded by our engine like any upload. Today: KernelBench-Hard's published runs of one GPU.

Each published solution becomes a run of the source's account (named after the source, no
password) with the run's published facts as its metadata (model, harness, effort, tokens, cost,
wall time), where its code lives (``Run.source_url``) and the source's own verdict and peak
fraction (``Run.source_result``), shown beside ours and never ranked. The problems are imported
first (``python -m runners import-kernelbench-hard``) into a folder the engine reads
(``ARENA_EXTRA_PROBLEMS``) and registered. A second import adds only what is new: an identical
run of the same account is the run already stored (``services.runs.create_run``).
"""

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from django.core.files.base import ContentFile
from django.db import transaction

from runners.kernelbench_hard import published
from runners.schema import EXTRA_PROBLEMS_ENV
from runners.solution_files import SolutionFilesError, split_sidecars
from submissions.models import HardwareTarget, Harness, LanguageModel, Problem, Run
from submissions.services.accounts import service_account
from submissions.services.registry import engine_problems, sync_problems
from submissions.services.runs import create_run
from submissions.uploads import IncomingFile, IntakeError, RunFiles

SOURCE_ACCOUNT = "kernelbench-hard"
# Harnesses the registry may lack, by the slug published.harness_of gives them.
HARNESS_NAMES = {"grok-cli": "Grok CLI"}
IMPORT_TIMEOUT_S = 1800


class RunImportError(Exception):
    """The import cannot go on; the message says what to do."""


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)  # the source's run ids
    existing: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # run id -> why


def import_kernelbench_hard(
    *,
    checkout: Path,
    gpu: str,
    hardware: HardwareTarget,
    problems: Path,
    only: frozenset[str] = frozenset(),
) -> ImportReport:
    """Import the problems into ``problems`` (a folder of ARENA_EXTRA_PROBLEMS) and every run
    the checkout publishes for ``gpu``, each queued for grading on ``hardware``; ``only`` keeps
    the runs of those problems (the source's folder names or our slugs)."""
    runs = published.published_runs(checkout, gpu)
    if not runs:
        raise RunImportError(
            f"{checkout}: no published run for {gpu} (expected public/data/rundetail/{gpu}/ "
            f"and public/runs/{gpu}/ beside benchmarks/hard/problems-{gpu}/)"
        )
    if only:
        names = {run["problem"] for run in runs}
        unknown = only - names - {published.slug_for(name) for name in names}
        if unknown:
            raise RunImportError(
                f"no published run of {', '.join(sorted(unknown))} (the source's problems: "
                f"{', '.join(sorted(names))})"
            )
        runs = [r for r in runs if {r["problem"], published.slug_for(r["problem"])} & only]
    _import_problems(checkout, gpu, problems, {run["problem"] for run in runs})
    account = service_account(SOURCE_ACCOUNT)
    gpu_name = published.gpu_name(checkout, gpu)
    active = {p.slug: p for p in Problem.objects.filter(is_active=True)}
    report = ImportReport()
    for run in runs:
        problem = active.get(published.slug_for(run["problem"]))
        if problem is None:
            report.skipped[run["run_id"]] = f"problem {run['problem']} was not imported"
            continue
        try:
            created = _import_run(run, problem, hardware, account, gpu, gpu_name)
        except (IntakeError, SolutionFilesError) as error:  # this run only; the others go on
            report.skipped[run["run_id"]] = f"not stored: {error}"
            continue
        (report.created if created else report.existing).append(run["run_id"])
    return report


def _import_problems(checkout: Path, gpu: str, folder: Path, names: set[str]) -> None:
    extra = os.environ.get(EXTRA_PROBLEMS_ENV, "").split(os.pathsep)
    roots = [Path(p).resolve() for p in extra if p]
    if folder.resolve() not in roots:
        raise RunImportError(
            f"{folder} is not in {EXTRA_PROBLEMS_ENV}: set {EXTRA_PROBLEMS_ENV}={folder} for this "
            "command, the web process and the workers, so that all of them find the problems"
        )
    if any(not (folder / published.slug_for(name)).is_dir() for name in names):
        command = [sys.executable, "-m", "runners", "import-kernelbench-hard", str(checkout)]
        done = subprocess.run(
            [*command, "--gpu", gpu, str(folder)],
            capture_output=True,
            text=True,
            timeout=IMPORT_TIMEOUT_S,
        )
        if done.returncode != 0:
            output = (done.stderr or done.stdout)[-2000:]
            raise RunImportError(f"the problem import failed: {output}")
    sync_problems(infos=engine_problems())


def _import_run(
    run: dict, problem: Problem, hardware: HardwareTarget, account, gpu: str, gpu_name: str
) -> bool:
    """Store one published run (queued for grading); whether it is new."""
    model, _ = LanguageModel.objects.get_or_create(
        slug=published.model_slug(run["model"]),
        defaults={"display_name": run["model"], "provider": published.provider_of(run["model"])},
    )
    slug = published.harness_of(run["harness"])
    harness, _ = Harness.objects.get_or_create(
        slug=slug, defaults={"name": HARNESS_NAMES.get(slug, run["harness"])}
    )
    source, sidecars = split_sidecars(Path(run["solution_path"]).read_text(encoding="utf-8"))
    files = RunFiles(
        solution=IncomingFile("solution.py", ContentFile(source.encode(), name="solution.py")),
        transcripts=[],
        metadata={
            **published.run_facts(run),
            "source": published.SOURCE_NAME,
            "source_run_id": run["run_id"],
            "source_harness": run["harness"],
        },
        sidecars=[
            IncomingFile(name, ContentFile(text.encode(), name=name))
            for name, text in sidecars.items()
        ],
    )
    with transaction.atomic():
        stored, created = create_run(
            submitter=account,
            problem=problem,
            language_model=model,
            harness=harness,
            hardware=hardware,
            files=files,
            effort=run["effort"],
            transcript_required=False,  # the source publishes solutions, not transcripts
        )
        if created:
            Run.objects.filter(pk=stored.pk).update(
                source_url=published.source_url(run, gpu),
                source_result={
                    "source": published.SOURCE_NAME,
                    "run_id": run["run_id"],
                    "gpu": gpu_name,
                    "correct": bool(run.get("correct")),
                    "failure_reason": run.get("failure_reason") or "",
                    "peak_fraction": run.get("peak_fraction"),
                },
            )
    return created
