"""Typed reads of the environment that fail loudly on values they cannot interpret."""

import math
import os
import re

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_RATE = re.compile(r"^\d+/(s|sec|m|min|h|hour|d|day)$")


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, "").strip() or default


def env_bool(name: str, default: bool) -> bool:
    raw = env_str(name).lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={raw!r} is not a boolean; use one of 1/0, true/false, on/off"
    )


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = env_str(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum of {minimum}")
    return value


def env_float(name: str, default: float, *, minimum: float = 0.0) -> float:
    raw = env_str(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if not math.isfinite(value) or value < minimum:
        raise ImproperlyConfigured(f"{name}={raw} must be a finite number of at least {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = env_str(name)
    if not raw:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_rate(name: str, default: str | None) -> str | None:
    """A DRF throttle rate such as ``60/hour``; ``off`` means no limit."""
    raw = env_str(name).lower().replace(" ", "")
    if not raw:
        return default
    if raw in _FALSE:
        return None
    if not _RATE.match(raw):
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a rate; write requests/period, e.g. 60/hour, or off"
        )
    return raw
