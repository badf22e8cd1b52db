"""The runs a KernelBench-Hard checkout publishes for one GPU: each final solution, the peer's
verdict and per-shape figures, and the facts of the run (model, harness, effort, tokens, wall
time), as `manage.py import_runs` and `bench/peer_runs.py` read them. Standard library only: the
web process imports it.

Layout: the problems under `benchmarks/hard/problems-<gpu>/`, a run's solution text under
`public/runs/<gpu>/<run>_solution.py.txt`, its record under
`public/data/rundetail/<gpu>/<run>.json`, efforts and the GPU's name in
`benchmarks/hard/results/leaderboard.<gpu>.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Where the peer publishes its files (the run pages link them).
SOURCE_NAME = "KernelBench-Hard"
SOURCE_REPOSITORY = "https://github.com/Infatoshi/kernelbench.com"

# The peer's harness labels, as the agent CLI that ran (their scripts/lib/run_harness.sh):
# `claude` and the `<provider>-claude` and `or-*` routes are Claude Code pointed at another
# Anthropic-compatible endpoint; `hy3` (and its legacy alias `hy3-claude`) is OpenCode.
HARNESSES = {
    "claude": "claude-code",
    "codex": "codex-cli",
    "cursor": "cursor-agent",
    "gemini": "gemini-cli",
    "grok": "grok-cli",
    "hy3": "opencode",
    "hy3-claude": "opencode",
    "opencode": "opencode",
}
CLAUDE_CODE_ROUTES = ("-claude", "or-")
# Model id prefixes (lower case) and the provider that makes the model.
PROVIDERS = (
    ("claude", "Anthropic"),
    ("anthropic/", "Anthropic"),
    ("gpt", "OpenAI"),
    ("gemini", "Google"),
    ("grok", "xAI"),
    ("kimi", "Moonshot AI"),
    ("glm", "Z.ai"),
    ("minimax", "MiniMax"),
    ("deepseek", "DeepSeek"),
    ("longcat", "Meituan"),
    ("hy3", "Tencent"),
    ("tencent/", "Tencent"),
    ("qwen", "Alibaba"),
    ("composer", "Cursor"),
)


def slug_for(name: str) -> str:
    """Our problem slug for a peer problem folder: `01_fp8_gemm` -> `kbh_fp8_gemm`."""
    words = "".join(c if c.isalnum() else "_" for c in name.lower().lstrip("0123456789_"))
    return "kbh_" + "_".join(w for w in words.split("_") if w)


def problems_dir(checkout: Path, gpu: str) -> Path:
    return checkout / "benchmarks" / "hard" / f"problems-{gpu}"


def published_runs(checkout: Path, gpu: str) -> list[dict[str, Any]]:
    """Every run the peer publishes for `gpu` with a solution and a problem folder: its record,
    `solution_path`, and `effort` from the leaderboard where it names the run ("" otherwise)."""
    details = checkout / "public" / "data" / "rundetail" / gpu
    efforts = _efforts(checkout, gpu)
    runs = []
    for path in sorted(details.glob("*.json")):
        record = json.loads(path.read_text())
        solution = checkout / "public" / "runs" / gpu / f"{record['run_id']}_solution.py.txt"
        if solution.is_file() and (problems_dir(checkout, gpu) / record["problem"]).is_dir():
            effort = efforts.get(record["run_id"], "")
            runs.append({**record, "solution_path": str(solution), "effort": effort})
    return runs


def _leaderboard(checkout: Path, gpu: str) -> dict[str, Any]:
    path = checkout / "benchmarks" / "hard" / "results" / f"leaderboard.{gpu}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _efforts(checkout: Path, gpu: str) -> dict[str, str]:
    found = {}
    for entry in _leaderboard(checkout, gpu).get("models", []):
        for result in (entry.get("results") or {}).values():
            if isinstance(result, dict) and result.get("run_id"):
                found[result["run_id"]] = entry.get("effort") or ""
    return found


def gpu_name(checkout: Path, gpu: str) -> str:
    """The GPU the peer graded on, as its leaderboard names it ("NVIDIA H100 PCIe")."""
    return (_leaderboard(checkout, gpu).get("hardware") or {}).get("name") or gpu.upper()


def harness_of(label: str) -> str:
    """Our harness slug for the peer's harness label; an unknown label is kept, prefixed."""
    if label in HARNESSES:
        return HARNESSES[label]
    if label.startswith(CLAUDE_CODE_ROUTES[1]) or label.endswith(CLAUDE_CODE_ROUTES[0]):
        return "claude-code"
    return f"kbh-{label}"


def model_slug(model: str) -> str:
    """A URL slug: `anthropic/claude-opus-5` -> `claude-opus-5`, `kimi-k2.7-code` ->
    `kimi-k2-7-code`, `kinetic-0715[1m]` -> `kinetic-0715-1m`."""
    name = model.rsplit("/", 1)[-1].lower()
    kept = "".join(c if c.isalnum() or c in "-_" else "-" for c in name)
    return "-".join(part for part in kept.split("-") if part)


def provider_of(model: str) -> str:
    name = model.lower()
    return next((provider for prefix, provider in PROVIDERS if name.startswith(prefix)), "")


def source_url(run: dict[str, Any], gpu: str) -> str:
    """The published solution file of the run, on the peer's repository (HEAD: its default
    branch, whatever its name)."""
    return f"{SOURCE_REPOSITORY}/blob/HEAD/public/runs/{gpu}/{run['run_id']}_solution.py.txt"


def run_facts(run: dict[str, Any]) -> dict[str, Any]:
    """The run's agent-reported figures, under the keys an upload's metadata uses."""
    stats = run.get("stats") or {}
    facts = {
        "input_tokens": stats.get("input_tokens"),
        "output_tokens": stats.get("output_tokens"),
        "cost_usd": stats.get("cost_usd"),
        "wall_time_s": stats.get("agent_s"),
    }
    return {key: value for key, value in facts.items() if value is not None}


def run_record(run: dict[str, Any], gpu: str, gpu_name: str) -> dict[str, Any]:
    """What a run of ours records of one published run, apart from its code: who ran it (model,
    harness, effort), its agent-reported facts as an upload's metadata, where its code lives and
    the source's own verdict. `manage.py import_runs` and the demo's graded board both use it."""
    return {
        "source_run_id": run["run_id"],
        "problem": slug_for(run["problem"]),
        "model": {
            "slug": model_slug(run["model"]),
            "display_name": run["model"],
            "provider": provider_of(run["model"]),
        },
        "harness": harness_of(run["harness"]),
        "effort": run["effort"],
        "metadata": {
            **run_facts(run),
            "source": SOURCE_NAME,
            "source_run_id": run["run_id"],
            "source_harness": run["harness"],
        },
        "source_url": source_url(run, gpu),
        "source_result": {
            "source": SOURCE_NAME,
            "run_id": run["run_id"],
            "gpu": gpu_name,
            "correct": bool(run.get("correct")),
            "failure_reason": run.get("failure_reason") or "",
            "peak_fraction": run.get("peak_fraction"),
        },
    }
