"""The agent CLIs ``arena run`` launches: each one's non-interactive command line, the
environment it reads its provider from, where it writes its own session log, and how its
machine-readable output says the session ended.

Only the CLIs whose end-to-end run is tested here are listed (tests/launcher/ drives the real
binaries against a scripted model server); docs/launcher.md says which are planned.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Report:
    """What the CLI's own output says of the session: its id, whether it finished, the error it
    ended with, and its turns, cost and token usage where it gives them."""

    session_id: str = ""
    complete: bool = False
    error: str = ""
    turns: int | None = None
    cost_usd: float | None = None
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Harness(ABC):
    name: str
    binary: str  # looked up on PATH unless --cli names the executable
    # provider variables passed through from the caller's environment (keys, base URLs)
    provider_env: tuple[str, ...]

    @abstractmethod
    def command(self, cli: str, *, prompt: str, model: str, effort: str) -> list[str]:
        """The non-interactive command line."""

    def prepare(self, home: Path, env: dict[str, str], *, model: str) -> dict[str, str]:
        """Set up the CLI's own HOME for a run of `model`; the variables to add to its
        environment."""
        return {}

    @abstractmethod
    def native_logs(self, home: Path) -> list[tuple[str, Path]]:
        """(name in the run folder, path) of the session's own log files after the run."""

    @abstractmethod
    def report(self, events: list[dict[str, Any]]) -> Report:
        """The session's end as the CLI's JSON output (one object per line) tells it."""

    def find(self, cli: str | None) -> str | None:
        if cli:
            return cli if Path(cli).is_file() and os.access(cli, os.X_OK) else None
        return shutil.which(self.binary)


class ClaudeCode(Harness):
    """Claude Code in print mode (``claude -p``): the prompt as the argument, every tool allowed
    without asking (the workspace is the run's own), stream JSON on stdout, ending with a
    ``result`` event. Its session log is ``$HOME/.claude/projects/<workspace path with / as
    ->/<session id>.jsonl``, the logs of its subagents under ``<session id>/subagents/``."""

    def command(self, cli: str, *, prompt: str, model: str, effort: str) -> list[str]:
        return [
            cli,
            "-p",
            prompt,
            "--model",
            model,
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
        ]

    def prepare(self, home: Path, env: dict[str, str], *, model: str) -> dict[str, str]:
        return {
            # no update checks, telemetry or error reports from a graded run
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            # skipping permission prompts is refused under root unless the CLI is told it runs
            # in a sandbox: the run's workspace, HOME and caches are its own
            "IS_SANDBOX": "1",
        }

    def native_logs(self, home: Path) -> list[tuple[str, Path]]:
        found = []
        for session in sorted((home / ".claude" / "projects").glob("*/*.jsonl")):
            found.append((session.name, session))
            for agent in sorted((session.parent / session.stem / "subagents").glob("*.jsonl")):
                found.append((f"{session.stem}/subagents/{agent.name}", agent))
        return found

    def report(self, events: list[dict[str, Any]]) -> Report:
        report = Report()
        for event in events:
            report.session_id = str(event.get("session_id") or report.session_id)
            if event.get("type") != "result":
                continue
            report.complete = True
            if event.get("is_error"):
                report.error = str(event.get("result") or event.get("subtype") or "")[:500]
            report.turns = _integer(event.get("num_turns"))
            report.cost_usd = _number(event.get("total_cost_usd"))
            report.usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
        return report


class Codex(Harness):
    """Codex's ``codex exec --json``: no approvals and no sandbox of its own (the run's workspace
    and HOME are the run's), the effort as ``model_reasoning_effort``; its JSON lines end a
    finished session with ``turn.completed``. ``CODEX_HOME`` is the run's; with
    ``OPENAI_BASE_URL`` set, a ``config.toml`` there names that endpoint as the model provider
    (Responses API, the key from ``OPENAI_API_KEY``). Its session log is the rollout
    ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``."""

    def command(self, cli: str, *, prompt: str, model: str, effort: str) -> list[str]:
        command = [cli, "exec", "--json", "--skip-git-repo-check"]
        command += ["--dangerously-bypass-approvals-and-sandbox", "--model", model]
        if effort:
            command += ["--config", f"model_reasoning_effort={json.dumps(effort)}"]
        return [*command, prompt]

    def prepare(self, home: Path, env: dict[str, str], *, model: str) -> dict[str, str]:
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        if env.get("OPENAI_BASE_URL"):
            (codex_home / "config.toml").write_text(
                'model_provider = "arena"\n\n[model_providers.arena]\nname = "arena"\n'
                f"base_url = {json.dumps(env['OPENAI_BASE_URL'])}\n"
                'env_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
            )
        return {"CODEX_HOME": str(codex_home)}

    def native_logs(self, home: Path) -> list[tuple[str, Path]]:
        rollouts = sorted((home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))
        return [(path.name, path) for path in rollouts]

    def report(self, events: list[dict[str, Any]]) -> Report:
        report, usage = Report(), {}
        for event in events:
            kind = event.get("type")
            if kind == "thread.started":
                report.session_id = str(event.get("thread_id") or "")
            elif kind == "turn.completed":
                report.complete = True
                usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
            elif kind == "turn.failed":
                error = event.get("error")
                report.error = str(error.get("message") if isinstance(error, dict) else error)
            elif kind == "error" and not report.complete:
                report.error = str(event.get("message") or "")
        report.error = report.error[:500] if not report.complete else ""
        report.usage = usage
        return report


class GeminiCli(Harness):
    """Gemini CLI headless (``gemini --prompt``): every tool approved (``--approval-mode yolo``),
    the workspace trusted for the session (``--skip-trust``; headless runs refuse an untrusted
    folder), stream JSON on stdout ending with a ``result`` event. Its HOME holds a
    ``settings.json`` with no telemetry, usage statistics or update checks, and the auth type
    named: with ``GOOGLE_GEMINI_BASE_URL`` set, Gemini CLI 0.61 picks a "gateway" auth type from
    the environment that its own headless check then refuses. Its session log is
    ``$HOME/.gemini/tmp/<project>/chats/session-<time>-<session id prefix>.jsonl``, a subagent's
    ``chats/<session id>/<subagent session id>.jsonl``."""

    def command(self, cli: str, *, prompt: str, model: str, effort: str) -> list[str]:
        return [
            cli,
            "--prompt",
            prompt,
            "--model",
            model,
            "--output-format",
            "stream-json",
            "--approval-mode",
            "yolo",
            "--skip-trust",
        ]

    def prepare(self, home: Path, env: dict[str, str], *, model: str) -> dict[str, str]:
        settings: dict[str, Any] = {
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
        }
        if env.get("GOOGLE_GENAI_USE_VERTEXAI") == "true":
            settings["security"] = {"auth": {"selectedType": "vertex-ai"}}
        elif env.get("GEMINI_API_KEY"):
            settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        (home / ".gemini").mkdir(parents=True, exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
        return {}

    def native_logs(self, home: Path) -> list[tuple[str, Path]]:
        found = []
        for session in sorted((home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")):
            found.append((session.name, session))
            with session.open() as lines:  # the first line is the header with the session id
                session_id = str(json.loads(lines.readline() or "{}").get("sessionId") or "x")
            for agent in sorted((session.parent / session_id).glob("*.jsonl")):
                found.append((f"{session_id}/subagents/{agent.name}", agent))
        return found

    def report(self, events: list[dict[str, Any]]) -> Report:
        report = Report()
        for event in events:
            if event.get("type") == "init":
                report.session_id = str(event.get("session_id") or "")
            elif event.get("type") == "result":
                report.complete = True
                error = event.get("error") if isinstance(event.get("error"), dict) else {}
                if event.get("status") == "error":
                    report.error = str(error.get("message") or error.get("type") or "error")[:500]
                report.usage = event.get("stats") if isinstance(event.get("stats"), dict) else {}
        return report


class OpenCode(Harness):
    """opencode's ``opencode run --format json``: every permission granted (``--auto``), the
    model as ``arena/<model>`` of a provider the run's ``~/.config/opencode/opencode.json``
    defines (an OpenAI-compatible Chat Completions endpoint, ``OPENAI_BASE_URL`` or OpenAI's
    own, the key read from ``OPENAI_API_KEY``): opencode 1.18 exits 1 on a model its provider
    does not list, with an "Unexpected server error" that does not name it. No auto-update,
    sharing or fetch of the models.dev catalogue.

    Its own session store is SQLite (``~/.local/share/opencode/opencode.db``), which no parser of
    ours reads, so its native log is its JSON stdout, copied as ``<session id>.jsonl``. A run
    ends with the ``step_finish`` of a step that called no tool."""

    def command(self, cli: str, *, prompt: str, model: str, effort: str) -> list[str]:
        return [cli, "run", "--format", "json", "--auto", "--model", f"arena/{model}", prompt]

    def prepare(self, home: Path, env: dict[str, str], *, model: str) -> dict[str, str]:
        options = {
            "baseURL": env.get("OPENAI_BASE_URL") or "https://api.openai.com/v1",
            "apiKey": "{env:OPENAI_API_KEY}",  # read at start: the key stays out of the folder
        }
        provider = {"npm": "@ai-sdk/openai-compatible", "name": "arena", "options": options}
        config = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "provider": {"arena": provider | {"models": {model: {"name": model}}}},
        }
        (home / ".config" / "opencode").mkdir(parents=True, exist_ok=True)
        (home / ".config" / "opencode" / "opencode.json").write_text(json.dumps(config, indent=2))
        return {"OPENCODE_DISABLE_MODELS_FETCH": "1"}

    def native_logs(self, home: Path) -> list[tuple[str, Path]]:
        stdout = home.parent / "stdout.txt"  # the run folder's, beside its HOME
        session = re.search(r'"sessionID":"([\w-]+)"', stdout.read_text(errors="replace"))
        return [(f"{session.group(1)}.jsonl", stdout)] if session else []

    def report(self, events: list[dict[str, Any]]) -> Report:
        report = Report(turns=0)
        for event in events:
            report.session_id = str(event.get("sessionID") or report.session_id)
            part = event.get("part") if isinstance(event.get("part"), dict) else {}
            if event.get("type") == "step_finish":
                report.complete = part.get("reason") != "tool-calls"
                report.turns += 1
                report.cost_usd = (report.cost_usd or 0) + (_number(part.get("cost")) or 0)
                _add_tokens(report.usage, part.get("tokens"))
            elif event.get("type") == "error":
                report.complete, report.error = False, _opencode_error(event.get("error"))
        return report


def _add_tokens(totals: dict[str, Any], tokens: Any) -> None:
    """opencode's step tokens (``{input, output, reasoning, cache: {read, write}}``) added to
    ``input_tokens``, ``output_tokens``, ..., ``cache_read_tokens``."""
    tokens = tokens if isinstance(tokens, dict) else {}
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    for name, value in (*tokens.items(), *((f"cache_{k}", v) for k, v in cache.items())):
        if _integer(value) is not None:
            totals[f"{name}_tokens"] = totals.get(f"{name}_tokens", 0) + value


def _opencode_error(error: Any) -> str:
    """`{name, data: {message, statusCode}}`: the status first, which the outcome reads."""
    error = error if isinstance(error, dict) else {}
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    status = f"{data['statusCode']} " if _integer(data.get("statusCode")) else ""
    return f"{status}{data.get('message') or error.get('name') or 'error'}"[:500]


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


HARNESSES: dict[str, Harness] = {
    "claude-code": ClaudeCode(
        name="claude-code",
        binary="claude",
        provider_env=(
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
            "CLAUDE_CODE_MAX_RETRIES",  # the CLI's own retries of a failed request (default 10)
        ),
    ),
    "codex-cli": Codex(
        name="codex-cli",
        binary="codex",
        provider_env=("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY"),
    ),
    "gemini-cli": GeminiCli(
        name="gemini-cli",
        binary="gemini",
        provider_env=(
            "GEMINI_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
            "GOOGLE_API_KEY",
            "GOOGLE_GENAI_USE_VERTEXAI",
            "GOOGLE_CLOUD_PROJECT",
            "GOOGLE_CLOUD_LOCATION",
        ),
    ),
    "opencode": OpenCode(
        name="opencode", binary="opencode", provider_env=("OPENAI_API_KEY", "OPENAI_BASE_URL")
    ),
}
