"""``arena``: list problems, write an agent pack, grade locally, render a transcript, launch an
agent CLI on a problem, log in and submit a run folder. Exit statuses are in ``arena_cli.exits``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from arena_cli import config, local
from arena_cli.client import HOW_TO_LOG_IN, ApiError, AuthError, Client, Unreachable
from arena_cli.exits import AUTH, BAD_INPUT, OK, RUN_FAILED, UNREACHABLE
from arena_cli.harnesses import HARNESSES
from arena_cli.runfolder import RunFolderError, read_run_folder
from arena_cli.submit import Labels, submit, wait_for_grade


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (RunFolderError, config.ConfigError) as error:
        return _fail(str(error), BAD_INPUT)
    except AuthError as error:
        return _fail(str(error), AUTH)
    except Unreachable as error:
        return _fail(f"{error}\nIs the server running? Check --url or ARENA_URL.", UNREACHABLE)
    except ApiError as error:
        return _fail(str(error), UNREACHABLE if error.status >= 500 else BAD_INPUT)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


def _fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="arena", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    _problems(commands)
    _pack(commands)
    _evaluate(commands)
    _render(commands)
    _run(commands)
    _sweep(commands)
    _login(commands)
    _submit(commands)
    return parser


def _server_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help=f"the platform (ARENA_URL; default {config.DEFAULT_URL})")
    parser.add_argument("--token", help="API token (ARENA_TOKEN, or `arena login`)")
    parser.add_argument("--retries", type=int, default=3, help="retries on connection errors")


def _problems(commands) -> None:
    command = commands.add_parser("problems", help="list the problems (the server's, or --local)")
    _server_flags(command)
    command.add_argument("--local", action="store_true", help="the engine's deck, no server")
    command.set_defaults(handler=run_problems)


def _pack(commands) -> None:
    command = commands.add_parser("pack", help="write a problem's agent workspace")
    command.add_argument("problem")
    command.add_argument("dest", type=Path, help="a new or empty folder")
    command.set_defaults(handler=lambda a: local.pack(problem=a.problem, dest=a.dest))


def _evaluate(commands) -> None:
    command = commands.add_parser("evaluate", help="grade a solution here, with the same engine")
    command.add_argument("--problem", required=True)
    command.add_argument("--solution", required=True, type=Path)
    command.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    command.add_argument("--json", type=Path, help="also write the EvaluationResult here")
    command.set_defaults(
        handler=lambda a: local.evaluate(
            problem=a.problem, solution=a.solution, device=a.device, json_out=a.json
        )
    )


def _render(commands) -> None:
    command = commands.add_parser(
        "render", help="render transcript files to one HTML page", add_help=False
    )
    command.add_argument("rest", nargs=argparse.REMAINDER, help="FILES... -o OUT.html")
    command.set_defaults(handler=lambda a: local.render(a.rest or ["--help"]))


def _login(commands) -> None:
    command = commands.add_parser("login", help="store the server and token (file mode 0600)")
    command.add_argument("--url", default=None)
    command.add_argument("--token", default=None, help="read from stdin when left out")
    command.set_defaults(handler=run_login)


def _run(commands) -> None:
    command = commands.add_parser(
        "run", help="launch an agent CLI on a problem in a workspace of its own (docs/launcher.md)"
    )
    command.add_argument("--harness", required=True, help=f"the agent CLI: {', '.join(HARNESSES)}")
    command.add_argument("--model", required=True)
    command.add_argument("--effort", default="", help="recorded with the run")
    command.add_argument("--problem", required=True)
    command.add_argument("--budget", default="45m", help="wall budget: 45m, 90s, 1h30m")
    command.add_argument(
        "--gpu", help="CUDA_VISIBLE_DEVICES for the agent (0); its check takes that GPU's lock"
    )
    command.add_argument("--lock-dir", type=Path, help="where the per-GPU lock files live")
    command.add_argument("--out", type=Path, help="the run folder (new or empty)")
    command.add_argument("--cli", help="the CLI's executable (default: found on PATH)")
    command.add_argument("--submit", action="store_true", help="upload the run folder after")
    command.add_argument("--hardware", default="cpu", help="with --submit: hardware target slug")
    _server_flags(command)
    command.set_defaults(handler=run_run)


def _sweep(commands) -> None:
    command = commands.add_parser(
        "sweep", help="every run of a matrix (harness x model x effort x problem x repeat)"
    )
    command.add_argument("matrix", type=Path, help="the matrix YAML (docs/launcher.md)")
    command.add_argument("--out", type=Path, required=True, help="the sweep folder (resumable)")
    command.add_argument("--retry-infra", action="store_true", help="run retryable outcomes again")
    command.add_argument("--concurrency", type=int, help="runs at once (the matrix's otherwise)")
    command.add_argument(
        "--cli", action="append", default=[], metavar="HARNESS=PATH", help="a CLI's executable"
    )
    command.set_defaults(handler=run_sweep)


def _submit(commands) -> None:
    command = commands.add_parser("submit", help="upload a run folder")
    command.add_argument("run_dir", type=Path)
    command.add_argument("--problem", required=True)
    command.add_argument("--model", required=True)
    command.add_argument("--harness", required=True)
    command.add_argument("--hardware", default="cpu", help="hardware target slug (default cpu)")
    command.add_argument("--effort", default="")
    command.add_argument("--wait", action="store_true", help="follow the grading to its verdict")
    command.add_argument("--wait-timeout", type=float, default=1800.0, metavar="SECONDS")
    _server_flags(command)
    command.set_defaults(handler=run_submit)


def _client(args, *, needs_token: bool = False) -> Client:
    settings = config.resolve(url=args.url, token=args.token)
    if needs_token and not settings.token:
        raise AuthError(401, f"no API token: {HOW_TO_LOG_IN}")
    if args.retries < 0:
        raise ApiError(0, "--retries must be 0 or more")
    return Client(url=settings.url, token=settings.token, retries=args.retries)


def run_problems(args) -> int:
    if args.local:
        return local.list_local_problems()
    _, problems = _client(args).get_json("/api/v1/problems/")
    for problem in problems:
        print(f"{problem['slug']:<18} {problem['category']:<20} {problem['title']}")
    return OK


def run_login(args) -> int:
    token = args.token or _token_from_stdin()
    if not token:
        return _fail(f"no token given: {HOW_TO_LOG_IN}", BAD_INPUT)
    url = args.url or os.environ.get("ARENA_URL") or config.DEFAULT_URL
    path = config.store_login(url=url, token=token)
    print(f"stored the token for {url} in {path} (mode 0600)")
    return OK


def _token_from_stdin() -> str:
    if sys.stdin.isatty():
        print("API token: ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip()


def run_run(args) -> int:
    from arena_cli.launch import LaunchError, describe, parse_budget, run_agent

    try:
        budget_s = parse_budget(args.budget)
    except ValueError as error:
        return _fail(str(error), BAD_INPUT)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or Path("runs") / f"{args.problem}-{args.harness}-{args.model}-{stamp}"
    try:
        result = run_agent(
            harness=args.harness,
            model=args.model,
            effort=args.effort,
            problem=args.problem,
            out=out,
            budget_s=budget_s,
            cli=args.cli,
            gpu=args.gpu,
            lock_dir=args.lock_dir,
        )
    except LaunchError as error:
        return _fail(str(error), BAD_INPUT)
    print(describe(result, out))
    if result.outcome != "ok":
        return RUN_FAILED
    if not args.submit:
        return OK
    labels = Labels(args.problem, args.model, args.harness, args.hardware, args.effort)
    submit(_client(args, needs_token=True), read_run_folder(out), labels)
    return OK


def run_sweep(args) -> int:
    from arena_cli.sweep import MatrixError, read_matrix, run_sweep, summary

    bad = [item for item in args.cli if "=" not in item]
    if bad:
        return _fail(f"--cli {bad[0]}: write HARNESS=PATH", BAD_INPUT)
    try:
        matrix = read_matrix(args.matrix)
    except MatrixError as error:
        return _fail(str(error), BAD_INPUT)
    clis = dict(item.split("=", 1) for item in args.cli)
    if args.concurrency is not None and args.concurrency < 1:
        return _fail("--concurrency must be 1 or more", BAD_INPUT)
    manifest = run_sweep(
        matrix, args.out, retry_infra=args.retry_infra, concurrency=args.concurrency, cli=clis
    )
    print(summary(matrix, manifest))
    return OK


def run_submit(args) -> int:
    folder = read_run_folder(args.run_dir)
    client = _client(args, needs_token=True)
    labels = Labels(args.problem, args.model, args.harness, args.hardware, args.effort)
    created = submit(client, folder, labels)
    if not args.wait:
        return OK
    return wait_for_grade(client, created, timeout_s=args.wait_timeout)


if __name__ == "__main__":
    sys.exit(main())
