"""Codex token figures in our ``Usage`` terms.

Codex reports ``input_tokens`` *including* ``cached_input_tokens`` and ``output_tokens``
*including* ``reasoning_output_tokens``. ``Usage.input`` excludes cache reads, so it becomes
``input_tokens - cached_input_tokens``; ``Usage.output`` stays ``output_tokens`` (reasoning
included) and ``Usage.reasoning`` repeats the reasoning share for display, so
``Usage.total`` is never counted twice.
"""

from __future__ import annotations

from typing import Any

from transcripts.model import Usage
from transcripts.parsers.common import (
    as_int,
)


def codex_usage(figures: Any) -> Usage | None:
    if not isinstance(figures, dict):
        return None
    cached = as_int(figures.get("cached_input_tokens"))
    return Usage(
        input=max(as_int(figures.get("input_tokens")) - cached, 0),
        output=as_int(figures.get("output_tokens")),
        cache_read=cached,
        cache_write=as_int(figures.get("cache_write_input_tokens")),
        reasoning=as_int(figures.get("reasoning_output_tokens")),
    )
