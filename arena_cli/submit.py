"""``arena submit``: upload a run folder, then optionally follow its grading."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from arena_cli.client import Client, Multipart, Part
from arena_cli.exits import CANDIDATE_FAILED, OK, WAIT_TIMEOUT
from arena_cli.runfolder import RunFolder

RUNS_PATH = "/api/v1/runs/"
DONE_STATUSES = ("evaluated", "failed")


@dataclass(frozen=True)
class Labels:
    problem: str
    model: str
    harness: str
    hardware: str
    effort: str = ""


def upload_form(folder: RunFolder, labels: Labels) -> Multipart:
    parts = [
        Part("problem", labels.problem),
        Part("model", labels.model),
        Part("harness", labels.harness),
        Part("hardware", labels.hardware),
        Part("effort", labels.effort),
        Part("solution", path=folder.solution, filename="solution.py"),
        *(Part("solution_files", path=path, filename=path.name) for path in folder.sidecars),
    ]
    if folder.metadata is not None:
        parts.append(Part("metadata", folder.metadata))
    for name, path in folder.transcripts:
        parts.append(Part("transcript", path=path, filename=path.name))
        parts.append(Part("transcript_name", name))
    return Multipart(parts)


def submit(client: Client, folder: RunFolder, labels: Labels) -> dict:
    print(f"sending {folder.describe()} to {client.url}", file=sys.stderr)
    status, body = client.upload(RUNS_PATH, upload_form(folder, labels))
    fresh = "new run" if status == 201 else "identical to an earlier upload, same run"
    print(f"run {body['id']} ({fresh}): {body['url']}")
    return body


def wait_for_grade(
    client: Client,
    created: dict,
    *,
    timeout_s: float,
    every_s: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    deadline = clock() + timeout_s
    while True:
        _, run = client.get_json(created["status_url"])
        if run["status"] in DONE_STATUSES:
            return report_grade(run)
        if clock() >= deadline:
            still = f"still {run['status']} after {timeout_s:.0f}s: {created['url']}"
            print(still, file=sys.stderr)
            return WAIT_TIMEOUT
        print(f"status: {run['status']}", file=sys.stderr)
        client.sleep(every_s)


def score_text(score: float) -> str:
    """A score as the run page writes it (three significant digits, scientific below 0.001):
    a CPU smoke grade's 1.2e-6 is not 0.0000."""
    if score == 0:
        return "0"
    if abs(score) < 1e-3:
        mantissa, exponent = f"{score:.2e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    decimals = max(0, 2 - math.floor(math.log10(abs(score))))
    text = f"{score:,.{decimals}f}"
    rounded_up = math.floor(math.log10(abs(float(text.replace(",", ""))))) > math.floor(
        math.log10(abs(score))
    )
    return text.rstrip("0").rstrip(".") if rounded_up and "." in text else text


def report_grade(run: dict) -> int:
    evaluation = run.get("latest_evaluation") or {}
    verdict = evaluation.get("verdict") or evaluation.get("status") or run["status"]
    score = evaluation.get("score")
    print(f"verdict: {verdict}")
    print(f"score: {'-' if score is None else score_text(score)}")
    if evaluation.get("reason"):
        print(f"reason: {evaluation['reason']}")
    print(f"run: {run['url']}")
    return OK if verdict == "ok" else CANDIDATE_FAILED
