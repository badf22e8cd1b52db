"""The agent CLIs ``arena run`` launches: each one's non-interactive command line, the
environment it reads its provider from, and where it writes its own session log.

Only the CLIs whose end-to-end run is tested here are listed (tests/launcher/ drives the real
binary against a scripted model server); docs/launcher.md says which are planned.
"""

from __future__ import annotations

import os
import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Harness(ABC):
    name: str
    binary: str  # looked up on PATH unless --cli names the executable
    # provider variables passed through from the caller's environment (keys, base URLs)
    provider_env: tuple[str, ...]

    @abstractmethod
    def command(self, cli: str, *, prompt: str, model: str) -> list[str]:
        """The non-interactive command line."""

    def environment(self, home: Path) -> dict[str, str]:
        """Variables the harness needs beyond HOME and the caches (runners set those)."""
        return {}

    @abstractmethod
    def native_logs(self, home: Path, workspace: Path) -> list[tuple[str, Path]]:
        """(name in the run folder, path) of the session's own log files after the run."""

    def find(self, cli: str | None) -> str | None:
        if cli:
            return cli if Path(cli).is_file() and os.access(cli, os.X_OK) else None
        return shutil.which(self.binary)


class ClaudeCode(Harness):
    """Claude Code in print mode (``claude -p``): the prompt as the argument, every tool allowed
    without asking (the workspace is the run's own), stream JSON on stdout. Its session log is
    ``$HOME/.claude/projects/<workspace path with / as ->/<session id>.jsonl``, the logs of its
    subagents under ``<session id>/subagents/``."""

    def command(self, cli: str, *, prompt: str, model: str) -> list[str]:
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

    def environment(self, home: Path) -> dict[str, str]:
        return {
            # no update checks, telemetry or error reports from a graded run
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            # skipping permission prompts is refused under root unless the CLI is told it runs
            # in a sandbox: the run's workspace, HOME and caches are its own
            "IS_SANDBOX": "1",
        }

    def native_logs(self, home: Path, workspace: Path) -> list[tuple[str, Path]]:
        projects = home / ".claude" / "projects"
        found = []
        for session in sorted(projects.glob("*/*.jsonl")):
            found.append((session.name, session))
            for agent in sorted((session.parent / session.stem / "subagents").glob("*.jsonl")):
                found.append((f"{session.stem}/subagents/{agent.name}", agent))
        return found


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
}
