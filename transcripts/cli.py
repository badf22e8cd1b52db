"""``python -m transcripts render FILES... -o OUT.html``: one self-contained transcript page.

Secrets are redacted as on the platform: a page rendered locally is as safe to share."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from transcripts.parsers import TranscriptError, parse_files, session_files_for
from transcripts.redact import redact_session
from transcripts.render import render_html

EXIT_BAD_INPUT = 2


class InputError(Exception):
    """Input the command cannot use; the message is shown to the user as is."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m transcripts")
    commands = parser.add_subparsers(dest="command", required=True)
    render = commands.add_parser("render", help="render transcript files to one HTML page")
    render.add_argument("files", nargs="+", type=Path, help="transcript files of one run")
    render.add_argument("-o", "--output", required=True, type=Path, help="the HTML file to write")
    render.add_argument("--title")
    for name in ("problem", "model", "harness", "verdict"):
        render.add_argument(f"--{name}")
    render.add_argument("--score", type=float)
    render.add_argument("--solution", type=Path, help="the run's solution.py, shown highlighted")
    render.add_argument("--evaluation", type=Path, help="an EvaluationResult JSON file")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        session = redact_session(parse_files(run_files(args.files)))
        page = render_html(session, context=context_from(args))
    except (InputError, TranscriptError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    args.output.write_text(page, encoding="utf-8", errors="replace")
    print(f"wrote {args.output} ({len(page):,} characters)")
    return 0


def run_files(paths: list[Path]) -> list[Path]:
    """The given files plus the subagent files Claude Code keeps beside a session file."""
    found: dict[Path, None] = {}
    for path in paths:
        _check_readable(path)
        extra = session_files_for(path) if path.suffix == ".jsonl" else [path]
        found.update(dict.fromkeys(extra))
    return list(found)


def context_from(args: argparse.Namespace) -> dict:
    context = {
        "title": args.title,
        "problem": args.problem,
        "model": args.model,
        "harness": args.harness,
        "verdict": args.verdict,
        "score": args.score,
    }
    if args.solution is not None:
        context["solution"] = _read_text(args.solution)
    if args.evaluation is not None:
        context["evaluation"] = _read_evaluation(args.evaluation)
    return {key: value for key, value in context.items() if value is not None}


def _check_readable(path: Path) -> None:
    if not path.is_file():
        raise InputError(f"{path}: no such file (or not a regular file)")
    try:
        with open(path, "rb") as stream:
            stream.read(1)
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror})") from error


def _read_text(path: Path) -> str:
    _check_readable(path)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 text") from error


def _read_evaluation(path: Path) -> dict:
    try:
        data = json.loads(_read_text(path))
    except ValueError as error:
        raise InputError(f"{path}: not JSON ({error})") from error
    if not isinstance(data, dict):
        raise InputError(f"{path}: an EvaluationResult must be a JSON object")
    return data
