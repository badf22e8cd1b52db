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

from runners.contract import (
    EXTRA_PROBLEMS_ENV,
    EvaluationResult,
    ProblemInfo,
    SolutionFilesError,
    split_sidecars,
)
from runners.kernelbench_hard import published
from submissions.models import Evaluation, HardwareTarget, Harness, LanguageModel, Problem, Run
from submissions.services.accounts import service_account
from submissions.services.evaluations import claim, create_evaluation, record_result
from submissions.services.registry import engine_problems, register_problems, sync_problems
from submissions.services.runs import create_run, create_run_without_code
from submissions.uploads import IncomingFile, IntakeError, RunFiles

SOURCE_ACCOUNT = "kernelbench-hard"
# Harnesses the registry may lack, by the slug published.harness_of gives them.
HARNESS_NAMES = {"grok-cli": "Grok CLI"}
IMPORT_TIMEOUT_S = 1800
GRADED_FORMAT = 1  # the graded-runs file bench/peer_board.py writes


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
    run_ids: tuple[str, ...] = (),
) -> ImportReport:
    """Import the problems into ``problems`` (a folder of ARENA_EXTRA_PROBLEMS) and every run
    the checkout publishes for ``gpu``, each queued for grading on ``hardware``; ``only`` keeps
    the runs of those problems (the source's folder names or our slugs), ``run_ids`` those runs,
    queued in that order."""
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
    if run_ids:
        by_id = {run["run_id"]: run for run in runs}
        unknown = [run_id for run_id in run_ids if run_id not in by_id]
        if unknown:
            raise RunImportError(
                f"no published run {', '.join(unknown)} for {gpu}"
                + (" among the named problems" if only else "")
            )
        runs = [by_id[run_id] for run_id in dict.fromkeys(run_ids)]
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
    record = published.run_record(run, gpu, gpu_name)
    model, harness = _registry_rows(record)
    source, sidecars = split_sidecars(Path(run["solution_path"]).read_text(encoding="utf-8"))
    files = RunFiles(
        solution=IncomingFile("solution.py", ContentFile(source.encode(), name="solution.py")),
        transcripts=[],
        metadata=record["metadata"],
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
            effort=record["effort"],
            transcript_required=False,  # the source publishes solutions, not transcripts
        )
        if created:
            Run.objects.filter(pk=stored.pk).update(
                source_url=record["source_url"], source_result=record["source_result"]
            )
    return created


def _registry_rows(record: dict) -> tuple[LanguageModel, Harness]:
    model = record["model"]
    language_model, _ = LanguageModel.objects.get_or_create(
        slug=model["slug"],
        defaults={"display_name": model["display_name"], "provider": model["provider"]},
    )
    slug = record["harness"]
    label = record["metadata"].get("source_harness", slug)
    harness, _ = Harness.objects.get_or_create(
        slug=slug, defaults={"name": HARNESS_NAMES.get(slug, label)}
    )
    return language_model, harness


def load_graded(data: dict) -> ImportReport:
    """Published runs with our grade of each made elsewhere, as ``bench/peer_board.py`` writes
    them (the demo's board of real agent runs): the source's problems registered from their
    facts, each run stored without its code (``Run.source_url`` says where it lives) and its
    evaluation recorded as the worker stored it. Nothing is queued; a run already here is left
    as it is, so loading twice adds only what is new; a file that fails part-way loads nothing."""
    if data.get("format") != GRADED_FORMAT:
        raise RunImportError(
            f"not a graded-runs file of format {GRADED_FORMAT} (bench/peer_board.py writes them)"
        )
    slug = data["graded_on"]["target"]
    hardware = HardwareTarget.objects.filter(slug=slug).first()
    if hardware is None:
        raise RunImportError(f"no hardware target {slug!r}: run manage.py seed_registry first")
    report = ImportReport()
    with transaction.atomic():  # a file that fails part-way leaves nothing behind
        register_problems(infos=[ProblemInfo.from_dict(info) for info in data["problems"]])
        slugs = [info["slug"] for info in data["problems"]]
        problems = {p.slug: p for p in Problem.objects.filter(slug__in=slugs)}
        account = service_account(SOURCE_ACCOUNT)
        for entry in data["runs"]:
            created = _load_graded_run(entry, problems[entry["problem"]], hardware, account)
            (report.created if created else report.existing).append(entry["source_run_id"])
    return report


def _load_graded_run(entry: dict, problem: Problem, hardware: HardwareTarget, account) -> bool:
    model, harness = _registry_rows(entry)
    graded = entry["graded"]
    with transaction.atomic():
        run, created = create_run_without_code(
            submitter=account,
            problem=problem,
            language_model=model,
            harness=harness,
            hardware=hardware,
            effort=entry["effort"],
            metadata=entry["metadata"],
            solution_sha256=entry["solution_sha256"],
            source_url=entry["source_url"],
            source_result=entry["source_result"],
        )
        if created:
            evaluation = create_evaluation(run=run, send=False)
            held = claim(evaluation_id=evaluation.pk, worker=graded["worker"])
            record_result(held, EvaluationResult.from_dict(entry["result"]))
            Evaluation.objects.filter(pk=evaluation.pk).update(
                created_at=graded["queued_at"],
                started_at=graded["started_at"],
                finished_at=graded["finished_at"],
            )
    return created
