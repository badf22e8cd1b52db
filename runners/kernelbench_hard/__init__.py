"""KernelBench-Hard problems as problem folders (`python -m runners import-kernelbench-hard`).

A KernelBench-Hard checkout (github.com/Infatoshi/kernelbench.com, `benchmarks/hard/`) keeps one
folder of problems per GPU (`problems-h100/01_fp8_gemm/`: problem.yaml, reference.py, shapes.py,
check.py, PROMPT.txt, sota.py) and its grader under `src/eval/`. Each problem becomes one of ours
(runners.kernelbench_hard.convert): reference.py verbatim, shapes.py's SHAPES as the visible
shapes under the names check.py sets on the reference module, their tolerance per output dtype
and their numeric stress cases as our `cases` (both from their grader, imported from the
checkout: peer). What cannot be derived is ours, per known problem (known): smoke and held-out
shapes and a structural input case (cases). Every reference runs on the CPU at its smoke shapes,
which also tells the outputs' count and dtypes, and on the meta device at every held-out shape,
so that a shape it refuses is never written (running). Everything not carried is listed in
DEST/IMPORT_REPORT.md (writing). This package imports torch.
"""

from __future__ import annotations

from pathlib import Path

from runners.kernelbench_hard.convert import convert
from runners.kernelbench_hard.known import KNOWN_FILE, load_known
from runners.kernelbench_hard.peer import (
    KNOWN_GPUS,
    CheckoutError,
    PeerEval,
    Unconvertible,
    load_peer_eval,
    problems_folder,
)
from runners.kernelbench_hard.writing import (
    MARKER,
    REPORT,
    REPORT_TITLE,
    ImportReport,
    render_report,
    write_problem,
)

__all__ = ["CheckoutError", "ImportReport", "import_checkout"]

# Their problem.yaml fields with no counterpart here: sota is their library line (ours is a
# Library class in reference.py); trial counts and hardware are the engine's.
UNCARRIED_FIELDS = ("precision", "hardware", "peak_bandwidth_key", "sota")
UNCARRIED_FIELDS += ("num_correct_trials", "num_perf_trials")


def import_checkout(
    checkout: Path, gpu: str, dest: Path, *, known_file: Path = KNOWN_FILE
) -> ImportReport:
    """Convert every problem of problems-<gpu> into dest and write dest/IMPORT_REPORT.md. A
    folder an earlier import wrote is replaced; any other folder in the way is an error, raised
    before anything is written."""
    source = problems_folder(checkout, gpu)
    evaluation = load_peer_eval(source.parent)
    known = load_known(known_file)
    report = ImportReport(gpu=gpu, source=source, general=_general_notes(source, evaluation))
    for folder in sorted(p for p in source.iterdir() if (p / "problem.yaml").is_file()):
        try:
            converted = convert(folder, evaluation, known.get(folder.name))
            if any(c.slug == converted.slug for c in report.imported):
                raise Unconvertible(f"its slug {converted.slug} is another problem's")
        except Unconvertible as exc:
            report.skipped.append((folder.name, str(exc)))
            continue
        report.imported.append(converted)
    _check_ours(dest, [c.slug for c in report.imported])
    dest.mkdir(parents=True, exist_ok=True)
    for converted in report.imported:
        write_problem(converted, dest / converted.slug, source=source / converted.name)
    (dest / REPORT).write_text(render_report(report), encoding="utf-8")
    return report


def _general_notes(source: Path, evaluation: PeerEval) -> list[str]:
    notes = [
        f"Fields of their problem.yaml not carried: {', '.join(UNCARRIED_FIELDS)}. Files not "
        "carried: sota.py (their library line), check.py and benchmark.py (the engine grades "
        "and times).",
        "Held-out shapes are ours (runners/problems/kernelbench_hard.yaml), sized for an H100 "
        "and accepted by the reference on the meta device; the import measures no GPU time.",
    ]
    if evaluation.stress is None:
        notes.append("This checkout has no src/eval/numeric_stress.py: no stress cases.")
    others = [gpu for gpu in KNOWN_GPUS if f"problems-{gpu}" != source.name]
    absent = [f"problems-{g}" for g in others if not (source.parent / f"problems-{g}").is_dir()]
    if absent:
        notes.append(f"Absent from this checkout: {', '.join(absent)} (other GPUs' problems).")
    return notes


def _check_ours(dest: Path, slugs: list[str]) -> None:
    if dest.exists() and not dest.is_dir():
        raise FileExistsError(f"{dest}: not a folder")
    for slug in slugs:
        folder = dest / slug
        if folder.exists() and not (folder / MARKER).is_file():
            raise FileExistsError(f"{folder}: exists and was not written by this import")
    report = dest / REPORT
    if report.exists() and not report.read_text(encoding="utf-8").startswith(REPORT_TITLE):
        raise FileExistsError(f"{report}: exists and was not written by this import")
