"""The commands that work without a server: they load the engine or the transcript tools on
demand, so ``arena submit`` stays light."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from arena_cli.exits import BAD_INPUT, CANDIDATE_FAILED, OK


def list_local_problems() -> int:
    from runners.pack import problem_info
    from runners.problem import list_problems

    for info in (problem_info(problem) for problem in list_problems()):
        cpu = "cpu" if info.cpu_capable else "gpu only"
        print(f"{info.slug:<18} {info.category:<20} {cpu:<8} {info.title}")
    return OK


def pack(*, problem: str, dest: Path) -> int:
    from runners.pack import PackError, write_pack
    from runners.problem import ProblemError, load_problem

    try:
        written = write_pack(load_problem(problem), dest)
    except (ProblemError, PackError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return BAD_INPUT
    for path in written:
        print(path)
    hint = f"write your solution to {dest / 'solution.py'}; `python check.py` tries it"
    print(hint, file=sys.stderr)
    return OK


def evaluate(*, problem: str, solution: Path, device: str, json_out: Path | None) -> int:
    if not solution.exists():  # a file, or a folder with solution.py and its native sources
        print(f"error: {solution}: no such file or folder", file=sys.stderr)
        return BAD_INPUT
    from runners.cli import format_summary
    from runners.evaluate import evaluate as grade
    from runners.problem import ProblemError

    try:
        result = grade(problem, solution, device=device, baselines={})
    except (ProblemError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return BAD_INPUT
    if json_out is not None:
        json_out.write_text(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n")
    print(format_summary(result))
    return OK if result.verdict == "ok" else CANDIDATE_FAILED


def render(argv: list[str]) -> int:
    from transcripts.cli import main as transcripts_main

    return transcripts_main(["render", *argv])
