"""Where the server and the token come from: flags, then ``ARENA_URL`` / ``ARENA_TOKEN``, then
the config file that ``arena login`` writes (``$ARENA_CONFIG``, else
``$XDG_CONFIG_HOME/arena/config.json``, else ``~/.config/arena/config.json``)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8000"


class ConfigError(Exception):
    """The config file exists but cannot be used; the message says why."""


@dataclass(frozen=True)
class Settings:
    url: str
    token: str | None


def config_path() -> Path:
    if os.environ.get("ARENA_CONFIG"):
        return Path(os.environ["ARENA_CONFIG"])
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "arena" / "config.json"


def read_config(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: not a readable JSON config ({error})") from error
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return data


def resolve(*, url: str | None, token: str | None) -> Settings:
    stored = read_config(config_path())
    return Settings(
        url=(url or os.environ.get("ARENA_URL") or stored.get("url") or DEFAULT_URL).rstrip("/"),
        token=token or os.environ.get("ARENA_TOKEN") or stored.get("token"),
    )


def store_login(*, url: str, token: str) -> Path:
    """Write the config with mode 0600 from the start: the token is never world-readable."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    body = json.dumps({"url": url.rstrip("/"), "token": token}, indent=2) + "\n"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(body)
    os.chmod(path, 0o600)  # an older file keeps its mode through O_CREAT
    return path
