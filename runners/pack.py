"""The agent pack: the workspace an agent starts from, holding nothing held out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from runners.plan import plan_shapes
from runners.problem import SHAPES_PLACEHOLDER, Problem
from runners.schema import ProblemInfo

ENGINE = Path(__file__).resolve().parent
# The pack's scripts, copied as they are. The pack holds no engine package: check.py loads the
# engine's own comparison from check_compare.py beside it (compare.py needs only torch).
SCRIPTS = {"check.py": ENGINE / "pack_check.py", "check_compare.py": ENGINE / "compare.py"}


class PackError(FileExistsError):
    """The pack cannot be written where asked."""


def write_pack(problem: Problem, dest: Path) -> list[Path]:
    """Write PROMPT.md, reference.py, starter.py (if any), shapes.json and the SCRIPTS into
    dest, which must be missing or empty. Returns the written paths."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise PackError(f"{dest}: the pack needs a new or empty directory")
    dest.mkdir(parents=True, exist_ok=True)
    written = [
        _write(dest / "PROMPT.md", render_prompt(problem)),
        _write(dest / "shapes.json", json.dumps(shapes_document(problem), indent=2) + "\n"),
        Path(shutil.copyfile(problem.path / "reference.py", dest / "reference.py")),
        *(Path(shutil.copyfile(source, dest / name)) for name, source in SCRIPTS.items()),
    ]
    if problem.starter_path is not None:
        written.append(Path(shutil.copyfile(problem.starter_path, dest / "starter.py")))
    return sorted(written)


def render_prompt(problem: Problem) -> str:
    template = (problem.path / "PROMPT.md").read_text(encoding="utf-8")
    return template.replace(SHAPES_PLACEHOLDER, shapes_table(problem))


def shapes_table(problem: Problem) -> str:
    names = problem.param_names
    rows = [
        "| shape | " + " | ".join(names) + " |",
        "|---:|" + "---:|" * len(names),
    ]
    for index, shape in enumerate(problem.visible):
        rows.append(f"| {index} | " + " | ".join(str(shape[name]) for name in names) + " |")
    return "\n".join(rows)


def shapes_document(problem: Problem) -> dict[str, object]:
    """What check.py needs to check as grading does the shapes it shows: visible and smoke
    shapes; the visible seeds and the distribution each draws (runners.plan); the cases among
    those (scale, generator); per distribution the comparison rule of each output in order
    (Problem.tolerance_for); the perturbed buffers. Nothing about held-out seeds: a
    distribution only they draw is left out."""
    distributions = plan_shapes(problem, "cuda")[0][0].dists
    drawn = list(dict.fromkeys(distributions))
    return {
        "problem": problem.slug,
        "version": problem.version,
        "visible": problem.visible,
        "smoke": problem.smoke,
        "seeds": problem.seeds,
        "distributions": distributions,
        "cases": {
            name: {"scale": case.scale, "generator": case.generator}
            for name, case in problem.cases.items()
            if name in drawn
        },
        "outputs": problem.outputs,
        "tolerances": {name: problem.tolerance_for(name) for name in drawn},
        "perturb_buffers": list(problem.perturb_buffers),
    }


def problem_info(problem: Problem) -> ProblemInfo:
    """The deck listing's entry: the statement as the pack writes it, visible shapes only."""
    return ProblemInfo(
        slug=problem.slug,
        title=problem.title,
        category=problem.category,
        regime=problem.regime,
        version=problem.version,
        visible_count=len(problem.visible),
        hidden_count=len(problem.hidden),
        peak_dtype=problem.peak_dtype,
        cpu_capable=problem.cpu_capable,
        statement=render_prompt(problem),
        visible_shapes=[dict(shape) for shape in problem.visible],
    )


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
