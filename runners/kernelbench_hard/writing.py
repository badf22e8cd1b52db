"""The files an imported problem folder holds, and the import report."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners.kernelbench_hard.convert import Imported
from runners.problem import SHAPES_PLACEHOLDER

MARKER = ".kernelbench-hard-import"  # dot-named: outside the folder's version and its copies
REPORT = "IMPORT_REPORT.md"
REPORT_TITLE = "# KernelBench-Hard import"
_PLAIN = re.compile(r"[A-Za-z_][\w.\-]*")


@dataclass
class ImportReport:
    gpu: str
    source: Path
    imported: list[Imported] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (problem, reason)
    general: list[str] = field(default_factory=list)

    def summary(self) -> str:
        held = sum(1 for c in self.imported if c.hidden)
        lines = [
            f"{self.gpu}: {len(self.imported)} imported ({held} with held-out shapes), "
            f"{len(self.skipped)} not imported"
        ]
        lines += [f"  not imported: {name}: {reason}" for name, reason in self.skipped]
        lines += [
            f"  {c.slug}: {len(c.smoke)} smoke, {len(c.hidden)} held-out, distributions "
            f"{', '.join(c.distributions)}; {len(c.notes)} note(s)"
            for c in self.imported
        ]
        return "\n".join(lines)


def write_problem(converted: Imported, folder: Path, *, source: Path) -> None:
    """Write (or replace) one problem folder, marked as this import's."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "problem.yaml").write_text(problem_yaml(converted, source), encoding="utf-8")
    (folder / "reference.py").write_text(converted.reference, encoding="utf-8")
    (folder / "PROMPT.md").write_text(prompt(converted), encoding="utf-8")
    if converted.hidden:
        (folder / "hidden.yaml").write_text(hidden_yaml(converted), encoding="utf-8")
    marker = {"tool": "python -m runners import-kernelbench-hard", "source": str(source)}
    (folder / MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")


def problem_yaml(c: Imported, source: Path) -> str:
    work = [(key, value) for key, value in (("flops", c.flops), ("bytes", c.bytes)) if value]
    lines = [
        f"# Imported from KernelBench-Hard {'/'.join(source.parts[-2:])} by python -m runners",
        "# import-kernelbench-hard; IMPORT_REPORT.md beside this folder says what was not carried.",
        f"slug: {c.slug}",
        f"title: {json.dumps(c.title)}",
        "category: pytorch-to-kernel",
        f"regime: {c.regime}",
        f"peak_dtype: {c.peak_dtype}",
        *(f"{key}: {json.dumps(value)}" for key, value in work),
        "# Their tolerance for each output's dtype (src/eval/correctness.py and problem.yaml);",
        "# an output of indices is compared up to ties, through the values it selects.",
        "outputs:",
        *(f"  {name}: {flow(rule)}" for name, rule in c.outputs.items()),
        f"forbidden: {flow(c.forbidden)}",
        "# normal: get_inputs() as drawn; the others: their numeric stress cases and ours.",
        f"distributions: {flow(c.distributions)}",
    ]
    if c.cases:
        lines += ["cases:", *(f"  {name}: {flow(case)}" for name, case in c.cases.items())]
    if c.perturb_buffers:
        lines.append(f"perturb_buffers: {flow(c.perturb_buffers)}")
    if c.no_hidden:
        lines.append(f"no_hidden: {json.dumps(c.no_hidden)}")
    lines += [
        "shapes:",
        "  visible:",
        *(f"    - {flow(shape)}" for shape in c.visible),
        "  smoke:",
        *(f"    - {flow(shape)}" for shape in c.smoke),
        f"seeds: {flow(c.seeds)}",
    ]
    return "\n".join(lines) + "\n"


def hidden_yaml(c: Imported) -> str:
    shapes = [f"  - {flow({'case': case, **shape})}" for case, shape in c.hidden]
    return "\n".join(["shapes:", *shapes, f"seeds: {flow(c.hidden_seeds)}"]) + "\n"


def flow(value: Any) -> str:
    """A YAML flow value whose floats PyYAML reads back as floats (it reads 1e-07 as a
    string: the mantissa needs a dot)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{flow(k)}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    if isinstance(value, bool) or value is None:
        raise TypeError(f"no YAML flow form for {value!r} here")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        mantissa, e, exponent = repr(value).partition("e")
        return f"{mantissa}.0e{exponent}" if e and "." not in mantissa else repr(value)
    text = str(value)
    return text if _PLAIN.fullmatch(text) else json.dumps(text)


def prompt(c: Imported) -> str:
    """Their PROMPT.txt as it is (its hardware wording included), then the shapes table under
    our names, the held-out shapes and the input cases."""
    renamed = [
        f"{ours} is shapes.py's {theirs}" for theirs, ours in c.names.items() if ours != theirs
    ]
    held_out = (
        "Grading also runs held-out shapes you are not shown."
        if c.hidden
        else f"This problem has no held-out shapes: {c.no_hidden}."
    )
    lines = [
        c.prompt.rstrip(),
        "",
        "## Shapes, as the grader names them",
        "",
        SHAPES_PLACEHOLDER,
        "",
        "The parameters are reference.py's module globals"
        + (f" ({', '.join(renamed)})." if renamed else ".")
        + f" {held_out}",
    ]
    if c.cases:
        described = "; ".join(_case_text(name, case) for name, case in c.cases.items())
        lines.append(f"Besides get_inputs()'s own draw, inputs are drawn as: {described}.")
    return "\n".join(lines) + "\n"


def _case_text(name: str, case: dict) -> str:
    if "generator" in case:
        return f"{name} ({case['generator']}() in reference.py)"
    scaled = ", ".join(f"input {i} x{f:g}" for i, f in case["scale"].items())
    tolerance = "".join(
        f", {out} within atol {t['atol']:g} and rtol {t['rtol']:g}"
        for out, t in case.get("tolerance", {}).items()
    )
    return f"{name} ({scaled}{tolerance})"


def render_report(report: ImportReport) -> str:
    lines = [
        REPORT_TITLE,
        "",
        f"From `{report.source}` by `python -m runners import-kernelbench-hard --gpu "
        f"{report.gpu}`.",
        "",
        "```",
        report.summary(),
        "```",
        "",
        *(f"- {note}" for note in report.general),
    ]
    for c in report.imported:
        held = f"{len(c.hidden)} held-out shapes" if c.hidden else "no held-out shapes"
        lines += [
            "",
            f"## {c.slug} (from {c.name})",
            "",
            f"{len(c.visible)} visible, {len(c.smoke)} smoke, {held}; distributions "
            f"{', '.join(c.distributions)}. Not carried, or not as it was:",
            "",
            *(f"- {note}" for note in c.notes or ["nothing"]),
        ]
    if report.skipped:
        lines += ["", "## Not imported", "", *(f"- {n}: {r}" for n, r in report.skipped)]
    return "\n".join(lines) + "\n"
