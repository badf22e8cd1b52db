"""`python -m runners evaluate | pack | problems | hardware | import-kernelbench[-hard]`.

Exit status 0 whenever a result was written, also for a failing candidate; 2 for bad arguments
or an unknown problem. `problems` and `hardware` never import torch; `import-kernelbench` does
only to check that each reference runs at its smoke shape (not with --no-smoke-check);
`import-kernelbench-hard` always does (it runs every reference on the CPU).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from runners import progress
from runners.schema import BASELINE_KINDS, EvaluationResult


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return args.handler(args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runners", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    grade = commands.add_parser("evaluate", help="grade one solution (a file or a folder)")
    grade.add_argument("--problem", required=True, help="problem slug or folder")
    grade.add_argument(
        "--solution",
        required=True,
        type=Path,
        help="solution.py, or a folder holding it and the native sources it builds "
        "(runners.solution_files)",
    )
    grade.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    grade.add_argument("--json", type=Path, help="write the EvaluationResult here")
    grade.add_argument("--baselines", type=Path, help="cached reference timings (JSON)")
    grade.add_argument(
        "--progress",
        nargs="?",
        const="steps",
        choices=("steps", "detail"),
        help="say each step of the grade on stderr as it ends; detail: also each request to the "
        "candidate and reference processes, with where the candidate spent its time",
    )
    grade.set_defaults(handler=_evaluate)
    pack = commands.add_parser("pack", help="write a problem's agent pack")
    pack.add_argument("slug")
    pack.add_argument("dest", type=Path)
    pack.set_defaults(handler=_pack)
    listing = commands.add_parser("problems", help="list the problem deck")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_problems)
    table = commands.add_parser("hardware", help="list the hardware table (roofline figures)")
    table.add_argument("--json", action="store_true")
    table.set_defaults(handler=_hardware)
    kernelbench = commands.add_parser(
        "import-kernelbench", help="turn a KernelBench level into problem folders"
    )
    kernelbench.add_argument("checkout", type=Path, help="a KernelBench repository checkout")
    kernelbench.add_argument("--level", type=int, required=True)
    kernelbench.add_argument("dest", type=Path, help="a new or empty folder")
    kernelbench.add_argument(
        "--no-smoke-check",
        action="store_true",
        help="keep the shrunk smoke shapes without running the references there (no torch)",
    )
    kernelbench.set_defaults(handler=_import_kernelbench)
    hard = commands.add_parser(
        "import-kernelbench-hard", help="turn a KernelBench-Hard checkout into problem folders"
    )
    hard.add_argument(
        "checkout", type=Path, help="a kernelbench.com (or KernelBench-Hard) checkout"
    )
    hard.add_argument("--gpu", default="h100", help="which problems-<gpu> folder (default h100)")
    hard.add_argument("dest", type=Path, help="where the folders go; re-running replaces them")
    hard.set_defaults(handler=_import_kernelbench_hard)
    return parser


def _evaluate(args: argparse.Namespace) -> int:
    from runners.evaluate import evaluate
    from runners.problem import ProblemError

    if args.progress and not progress.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        progress.addHandler(handler)
        progress.setLevel(logging.DEBUG if args.progress == "detail" else logging.INFO)
    try:
        baselines = read_baselines(args.baselines) if args.baselines else {}
        result = evaluate(args.problem, args.solution, device=args.device, baselines=baselines)
    except (ProblemError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n")
    print(format_summary(result))
    return 0


def read_baselines(path: Path) -> dict[str, Any]:
    """A mapping baseline_key -> {<each of BASELINE_KINDS>, starter_correct, timed_out}, or an
    earlier EvaluationResult to take them from (None where it had none: the engine measures
    those)."""
    data = json.loads(path.read_text())
    if isinstance(data, dict) and "shapes" in data:
        return baselines_of(data)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def baselines_of(result: dict[str, Any]) -> dict[str, Any]:
    """The baselines an EvaluationResult's dict measured or was given, keyed as `evaluate`
    takes them."""
    return {
        shape["baseline_key"]: {
            **{kind: shape.get(f"baseline_{kind}") for kind in BASELINE_KINDS},
            "starter_correct": shape.get("starter_correct"),
            "timed_out": shape.get("baseline_timed_out") or [],
        }
        for shape in result["shapes"]
        if shape.get("baseline_eager") or shape.get("starter_correct") is not None
    }


def format_summary(result: EvaluationResult) -> str:
    score = "null" if result.score is None else f"{result.score:.4f}"
    lines = [
        f"{result.problem} ({result.device}): {result.verdict} - {result.reason}",
        f"score {score}  hidden_score {_number(result.hidden_score)}  "
        f"correct_visible {result.correct_visible}  correct_hidden {result.correct_hidden}",
    ]
    lines += [
        f"  gate {g.name:<16} {g.status:<4} {g.duration_s:7.2f}s  {g.reason}" for g in result.gates
    ]
    for shape in result.shapes:
        label = f"{shape.set}[{shape.index}]"
        timing = f"{shape.time.median_us:10.2f} us" if shape.time else " " * 13
        peak, eager = _number(shape.peak_fraction), _number(shape.speedup_eager)
        lines.append(
            f"  {label:<11} correct={shape.correct!s:<5} {timing}  peak={peak}"
            f"  vs eager={eager}  vs compile={_number(shape.speedup_compile)}"
            + (f"  vs starter={_number(shape.speedup_starter)}" if shape.baseline_starter else "")
        )
    if result.starter:
        starter = result.starter
        lines.append(
            f"  starter: quadrant {starter.quadrant or '-'}  held-out correct "
            f"{starter.starter_hidden_correct}  run correct where it is "
            f"{_number(starter.conditional_hidden_correct)}"
        )
    cost = ", ".join(f"{k.removesuffix('_s')} {v:.1f}s" for k, v in result.cost.items())
    lines.append(f"  cost: {cost}")
    return "\n".join(lines)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _pack(args: argparse.Namespace) -> int:
    from runners.pack import write_pack
    from runners.problem import ProblemError, load_problem

    try:
        written = write_pack(load_problem(args.slug), args.dest)
    except (ProblemError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


def _problems(args: argparse.Namespace) -> int:
    from runners.pack import problem_info
    from runners.problem import ProblemError, list_problems

    try:
        infos = [problem_info(p) for p in list_problems()]
    except ProblemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([info.to_dict() for info in infos], indent=2))
    else:
        for info in infos:
            print(f"{info.slug:<18} {info.regime:<8} {info.version[:12]}  {info.title}")
    return 0


def _import_kernelbench(args: argparse.Namespace) -> int:
    from runners.kernelbench import import_level

    try:
        fit_smoke = None
        if not args.no_smoke_check:
            from runners.smoke_fit import fit as fit_smoke
        report = import_level(args.checkout, args.level, args.dest, fit_smoke=fit_smoke)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report.summary())
    print(f"report: {args.dest / 'IMPORT_REPORT.md'}")
    return 0


def _import_kernelbench_hard(args: argparse.Namespace) -> int:
    from runners.kernelbench_hard import import_checkout

    try:
        report = import_checkout(args.checkout, args.gpu, args.dest)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report.summary())
    print(f"report: {args.dest / 'IMPORT_REPORT.md'}")
    return 0


def _hardware(args: argparse.Namespace) -> int:
    from runners.hardware import ROWS

    if args.json:
        print(json.dumps([hw.to_dict() for hw in ROWS], indent=2))
        return 0
    for hw in ROWS:
        basis = "measured" if hw.measured else "declared"
        print(f"{hw.slug:<14} {hw.bandwidth_gbps:8.1f} GB/s  {basis:<8}  {hw.name}")
    return 0
