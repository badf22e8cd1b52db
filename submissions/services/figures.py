"""Writes: a run's figures (tokens, turns, wall time, cost), each with where it came from.

What the uploader's metadata says wins (source ``metadata``). A figure it lacks comes from the
parsed transcript: ``cli`` when the CLI reported the total itself, ``transcript`` when it was
summed from the transcript's events. A cost neither gives is priced from the registry's dated
list prices (``price:<date>``), and only when the token figures are known.
"""

from submissions.models import ModelPrice, Run
from submissions.models.runs import RUN_FIGURES
from transcripts.figures import CLI, run_figures
from transcripts.model import Session

METADATA = "metadata"
TRANSCRIPT = "transcript"
# the columns' ranges: turns is an integer, the token counts are bigint
CEILINGS = {"turns": 2**31, "wall_time_s": float("inf"), "cost_usd": float("inf")}
TOKEN_CEILING = 2**62


def refresh_figures(*, run: Run, session: Session | None) -> None:
    """Fill the figures the metadata left empty from `session` (None: the transcript could not
    be read), then price the run if it still has no cost."""
    sources = {k: v for k, v in run.figure_sources.items() if v == METADATA}
    values = {name: getattr(run, name) if name in sources else None for name in RUN_FIGURES}
    if session is not None:
        _take_from_transcript(run_figures(session), values, sources)
    _price(run, values, sources)
    Run.objects.filter(pk=run.pk).update(**values, figure_sources=sources)
    for name, value in values.items():
        setattr(run, name, value)
    run.figure_sources = sources


def _take_from_transcript(figures, values: dict, sources: dict) -> None:
    for name in RUN_FIGURES:
        value = getattr(figures, name)
        if name in sources or value is None or not 0 <= value < CEILINGS.get(name, TOKEN_CEILING):
            continue
        values[name] = value
        sources[name] = CLI if figures.sources.get(name) == CLI else TRANSCRIPT


def _price(run: Run, values: dict, sources: dict) -> None:
    if values["cost_usd"] is not None or values["input_tokens"] is None:
        return
    if values["output_tokens"] is None:
        return
    price = price_in_force(run)
    if price is None:
        return
    values["cost_usd"] = cost_of(price, values)
    sources["cost_usd"] = f"price:{price.effective_from.isoformat()}"


def price_in_force(run: Run) -> ModelPrice | None:
    on = run.created_at.date()
    prices = ModelPrice.objects.filter(language_model_id=run.language_model_id)
    return prices.filter(effective_from__lte=on).order_by("-effective_from").first()


def cost_of(price: ModelPrice, values: dict) -> float:
    """``input_tokens`` counts every prompt token, cache reads (``cached_input_tokens``)
    included; those are billed at the cached rate where the price has one."""
    cached = min(values["cached_input_tokens"] or 0, values["input_tokens"])
    cached_rate = price.cached_input_usd_per_mtok
    if cached_rate is None:
        cached_rate = price.input_usd_per_mtok
    dollars = (
        (values["input_tokens"] - cached) * price.input_usd_per_mtok
        + cached * cached_rate
        + values["output_tokens"] * price.output_usd_per_mtok
    )
    return dollars / 1e6
