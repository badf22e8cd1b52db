"""The demo's board of real agent runs: a peer's published runs with the grades
`bench/peer_regrade.py` made of them, written as the graded-runs file `manage.py
load_graded_runs` loads (`make demo` loads `submissions/demo/kernelbench_hard_h100.json`).

    python bench/peer_board.py --checkout PEER --problems DEST --out FILE RESULTS.jsonl...

PEER is a checkout of KernelBench-Hard (`Infatoshi/kernelbench.com`), DEST the problems
`python -m runners import-kernelbench-hard PEER --gpu h100 DEST` imported, RESULTS the
`evaluations.jsonl` files of peer_regrade's batches (a later file's grade of a run wins).

The file holds facts and our grades, never the source's files: per problem the facts the
platform registers (title, regime, version, the visible shapes' parameters), with a statement
of ours that says where the problem lives instead of the source's prompt; per run who ran it,
its agent-reported figures, the source's verdict and the link to its code, the sha256 of its
solution (so that a later import of the same files finds the run) and our evaluation, each text
cut at its first line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from peer_regrade import QUEUE, first_lines  # noqa: E402

from runners.kernelbench_hard import published  # noqa: E402
from runners.schema import EXTRA_PROBLEMS_ENV  # noqa: E402
from runners.solution_files import content_sha256, split_sidecars  # noqa: E402

FORMAT = 1  # submissions.services.imports.GRADED_FORMAT
TARGET = QUEUE.removeprefix("gpu.")


def main() -> int:
    args = _parse()
    runs = {run["run_id"]: run for run in published.published_runs(args.checkout, args.gpu)}
    grades = _grades(args.results)
    unknown = sorted(set(grades) - set(runs))
    if unknown:
        raise SystemExit(f"graded runs the checkout does not publish: {', '.join(unknown)}")
    gpu_name = published.gpu_name(args.checkout, args.gpu)
    entries = [_entry(runs[run_id], grade, args.gpu, gpu_name) for run_id, grade in grades.items()]
    board = {
        "format": FORMAT,
        "source": {
            "name": published.SOURCE_NAME,
            "repository": published.SOURCE_REPOSITORY,
            "gpu": gpu_name,
        },
        "graded_on": {
            "target": TARGET,
            "gpus": sorted({e["result"]["environment"].get("gpu") for e in entries} - {None}),
            "engines": sorted({e["result"]["engine_version"] for e in entries}),
            "command": "bench/peer_regrade.py (docs/benchmarks.md, 'Scale-out on one host')",
        },
        "problems": _problems(args.problems, {e["problem"] for e in entries}, args.gpu),
        "runs": sorted(entries, key=lambda e: (e["problem"], e["source_run_id"])),
    }
    args.out.write_text(json.dumps(board, indent=1, sort_keys=True) + "\n")
    print(f"{len(entries)} graded runs over {len(board['problems'])} problems -> {args.out}")
    return 0


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, required=True)
    parser.add_argument("--gpu", default="h100")
    parser.add_argument("--problems", type=Path, required=True, help="the imported problems")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("results", type=Path, nargs="+")
    return parser.parse_args()


def _grades(files: list[Path]) -> dict[str, dict]:
    grades = {}
    for path in files:
        for line in path.read_text().splitlines():
            grade = json.loads(line)
            grades[grade["source_run_id"]] = grade
    return grades


def _entry(run: dict, grade: dict, gpu: str, gpu_name: str) -> dict:
    source, sidecars = split_sidecars(Path(run["solution_path"]).read_text(encoding="utf-8"))
    sha256 = content_sha256(source.encode(), {n: t.encode() for n, t in sidecars.items()})
    return {
        **published.run_record(run, gpu, gpu_name),
        "solution_sha256": sha256,
        "graded": {key: grade[key] for key in ("worker", "queued_at", "started_at", "finished_at")},
        "result": first_lines(grade["result"]),
    }


def _problems(folder: Path, slugs: set[str], gpu: str) -> list[dict]:
    env = os.environ | {EXTRA_PROBLEMS_ENV: str(folder.resolve())}
    listed = subprocess.run(
        [sys.executable, "-m", "runners", "problems", "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    infos = [info for info in json.loads(listed.stdout) if info["slug"] in slugs]
    missing = slugs - {info["slug"] for info in infos}
    if missing:
        raise SystemExit(f"{folder} lacks {', '.join(sorted(missing))}: import the problems first")
    return [info | {"statement": _statement(info, gpu)} for info in infos]


def _statement(info: dict, gpu: str) -> str:
    return (
        f"{info['title']}: a problem of {published.SOURCE_NAME}, whose statement, reference and "
        f"shapes live in {published.SOURCE_REPOSITORY} under `benchmarks/hard/problems-{gpu}/`. "
        "This checkout holds only its facts and the grades of the runs below; `manage.py "
        "import_runs kernelbench-hard CHECKOUT` imports the problem itself (docs/problems.md)."
    )


if __name__ == "__main__":
    raise SystemExit(main())
