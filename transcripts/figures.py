"""The figures of one run that a leaderboard compares across harnesses, read from its transcript.

A figure is None when the transcript does not carry it. ``RunFigures.sources`` names, for each
figure present, where it came from: ``"cli"`` when the CLI reported the total itself (a result
line, a stats block, a rollout's running total), ``"events"`` when it was summed or derived here
from the transcript's events (or when a run mixes both). Nothing is estimated: a cost is only
ever the CLI's own figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from transcripts.model import Kind, Session, Usage, parse_timestamp
from transcripts.parsers.formats import FORMATS_BY_NAME

CLI = "cli"
EVENTS = "events"

_MODEL_OUTPUT = frozenset({Kind.ASSISTANT, Kind.REASONING, Kind.TOOL_CALL})
_MODEL_INPUT = frozenset({Kind.USER, Kind.TOOL_RESULT})


@dataclass(frozen=True)
class RunFigures:
    input_tokens: int | None = None  # every prompt token: uncached + cache reads + cache writes
    cached_input_tokens: int | None = None  # cache reads
    output_tokens: int | None = None  # every generated token, reasoning included
    reasoning_tokens: int | None = None  # the reasoning share of output_tokens
    turns: int | None = None
    wall_time_s: float | None = None
    cost_usd: float | None = None
    sources: dict[str, str] = field(default_factory=dict)  # figure name -> CLI or EVENTS


def run_figures(session: Session) -> RunFigures:
    """The figures of the run whose parsed transcript is ``session`` (subagents below it).

    Tokens count the whole run. A session's CLI-reported usage stands for it and for every
    subagent below it that reports none of its own (Claude stream-json's ``modelUsage`` includes
    its subagents); a subagent that reports its own (a spawned Codex thread's rollout) adds it.
    Sessions that report nothing, under no reporting ancestor, add their API calls' usage, each
    call once (the parsers keep one usage per call, so progress mirrors and repeated snapshots
    of a call never count twice). ``reasoning_tokens`` is None where no reasoning share is
    reported (Claude never splits it out).

    ``turns`` counts the model's responses in the main thread, one per API call: Claude Code's
    own ``num_turns`` where reported; otherwise each API call the parser identified, plus each
    stretch of model output between prompts and tool results that no call id covers. Subagents'
    responses are not turns (their cost is in the tokens).

    ``wall_time_s`` is the CLI's own duration where reported, else the span from the first to
    the last timestamp anywhere in the run. ``cost_usd`` is the CLI's figure (a reported total,
    or the per-call costs it wrote, summed over every session of the run).
    """
    usage, usage_source = run_usage(session)
    figures = {
        **_token_figures(usage, usage_source),
        "turns": _turns(session),
        "wall_time_s": _wall_time(session),
        "cost_usd": _cost(session),
    }
    present = {name: pair for name, pair in figures.items() if pair is not None}
    return RunFigures(
        **{name: value for name, (value, _) in present.items()},
        sources={name: source for name, (_, source) in present.items()},
    )


def run_usage(session: Session) -> tuple[Usage, str | None]:
    """The run's token usage by the rule of ``run_figures``, and its source (None: no usage)."""
    total, sources = Usage(), set()
    pending = [(session, False)]
    while pending:
        part, covered = pending.pop()
        if part.reported_usage is not None:
            total.add(part.reported_usage)
            sources.add(CLI)
        elif not covered and any(event.usage is not None for event in part.events):
            total.add(part.usage())
            sources.add(EVENTS)
        below = covered or part.reported_usage is not None
        pending += [(child, below) for event in part.events for child in event.children]
    if not sources:
        return total, None
    return total, CLI if sources == {CLI} else EVENTS


def _token_figures(usage: Usage, source: str | None) -> dict:
    if source is None:
        return {}
    figures = {
        "input_tokens": usage.input + usage.cache_read + usage.cache_write,
        "cached_input_tokens": usage.cache_read,
        "output_tokens": usage.output,
        "reasoning_tokens": usage.reasoning or None,
    }
    return {name: (value, source) for name, value in figures.items() if value is not None}


def turns(session: Session) -> int | None:
    """The turns of ``session`` (the run's figure, or a subagent's own), as ``run_figures``
    counts them: every page that shows turns reads them here."""
    found = _turns(session)
    return found[0] if found else None


def _turns(session: Session) -> tuple[int, str] | None:
    reported = _number(session.num_turns)
    if reported is not None:
        return int(reported), CLI
    if not session.events:
        return None
    return _responses(session), EVENTS


def _responses(session: Session) -> int:
    entry = FORMATS_BY_NAME.get(session.format)
    by_call = not (entry and entry.call_ids_are_turns)
    calls: set[str] = set()
    loose = 0
    for stretch in _model_stretches(session):
        ids = {event.api_call_id for event in stretch if event.api_call_id} if by_call else set()
        calls |= ids
        loose += bool(stretch) and not ids
    return len(calls) + loose


def _model_stretches(session: Session):
    """The model's output between one prompt or tool result and the next."""
    stretch = []
    for event in session.events:
        if event.kind in _MODEL_INPUT:
            yield stretch
            stretch = []
        elif event.kind in _MODEL_OUTPUT:
            stretch.append(event)
    yield stretch


def _wall_time(session: Session) -> tuple[float, str] | None:
    reported = _number(session.duration_ms)
    if reported is not None:
        return reported / 1000, CLI
    starts = [parse_timestamp(part.started_at) for _, part in session.walk()]
    ends = [parse_timestamp(part.ended_at) for _, part in session.walk()]
    starts, ends = [t for t in starts if t], [t for t in ends if t]
    if not starts or not ends or max(ends) <= min(starts):
        return None
    return (max(ends) - min(starts)).total_seconds(), EVENTS


def _cost(session: Session) -> tuple[float, str] | None:
    costs = [_number(part.cost_usd) for _, part in session.walk()]
    costs = [cost for cost in costs if cost is not None]
    if not costs:
        return None
    entry = FORMATS_BY_NAME.get(session.format)
    return float(sum(costs)), EVENTS if entry and entry.cost_summed_per_call else CLI


def _number(value) -> float | None:
    """A figure the CLI wrote, when it is a finite, non-negative number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) and value >= 0 else None
