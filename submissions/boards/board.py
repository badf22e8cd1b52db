"""The board of one ranked hardware target: one row per agent configuration.

Unfiltered, it is the snapshot's stored rows (one query). Filtered, it is recomputed from the
snapshot's run records in numpy, intervals included, without further queries.
"""

from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from itertools import compress
from urllib.parse import urlencode

import numpy as np
from django.http import QueryDict

from submissions.boards import snapshot
from submissions.boards.columns import ASCENDING_FIRST, COLUMNS, SORT_KEYS
from submissions.boards.snapshot import BoardRow, BudgetCount, ConfigRef, ProblemRef, Records
from submissions.models import HardwareTarget, Run

LIST_FILTERS = ("harness", "model", "provider", "category", "budget")
DATE_FILTERS = ("since", "until")


@dataclass(frozen=True)
class BoardFilters:
    harness: tuple[str, ...] = ()  # harness slugs
    model: tuple[str, ...] = ()  # language model slugs
    provider: tuple[str, ...] = ()
    category: tuple[str, ...] = ()  # problem categories
    budget: tuple[str, ...] = ()  # declared wall budgets (snapshot.budget_keys)
    since: date | None = None  # runs created on or after, local date
    until: date | None = None  # runs created on or before
    verified: bool = False  # only runs a verified campaign launched

    @classmethod
    def from_query(cls, query: QueryDict, *, strict: bool = False) -> "BoardFilters":
        """Repeated keys (``?harness=a&harness=b``), ISO dates and ``verified=1``; a date that
        does not parse is ignored, or raises ValueError when ``strict``."""
        lists = {name: _distinct(query.getlist(name)) for name in LIST_FILTERS}
        dates = {name: _date(query.get(name), strict=strict) for name in DATE_FILTERS}
        verified = query.get("verified", "") in ("1", "true", "on")
        return cls(**lists, **dates, verified=verified)

    def to_query(self) -> str:
        pairs = [(name, value) for name in LIST_FILTERS for value in getattr(self, name)]
        dates = [(name, getattr(self, name)) for name in DATE_FILTERS]
        pairs += [(name, day.isoformat()) for name, day in dates if day]
        return urlencode(pairs + ([("verified", "1")] if self.verified else []))

    @property
    def is_empty(self) -> bool:
        return self == NO_FILTERS

    def admits(self, config: ConfigRef) -> bool:
        wanted = (
            (self.harness, config.harness_slug),
            (self.model, config.model_slug),
            (self.provider, config.provider),
        )
        return all(not allowed or value in allowed for allowed, value in wanted)


NO_FILTERS = BoardFilters()


def _distinct(values: list[str]) -> tuple[str, ...]:
    return tuple(sorted({value for value in values if value}))


def _date(text: str | None, *, strict: bool) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        if strict:
            raise ValueError(f"{text!r} is not a date (YYYY-MM-DD)") from None
        return None


@dataclass(frozen=True)
class Board:
    hardware: HardwareTarget
    problems: list[ProblemRef]  # the active problems the scores are over
    rows: list[BoardRow]
    computed_at: datetime
    filters: BoardFilters
    sort: str
    descending: bool
    budgets: list[BudgetCount]  # the declared budgets of the runs ranked, and their counts
    sort_keys: tuple[str, ...] = SORT_KEYS
    columns: tuple = COLUMNS  # what the page draws (submissions.boards.columns)

    @property
    def mixes_budgets(self) -> bool:
        """The ranking compares runs made under different wall budgets (pages say so)."""
        return len(self.budgets) > 1


@dataclass(frozen=True)
class Provenance:
    """Where the runs a board counts come from, as pages say above the board."""

    synthetic: int  # synthetic data (bench/synthetic_history.py)
    sources: list[tuple[str, int]]  # (benchmark, runs) published elsewhere and graded here


def counted_provenance(*, hardware: HardwareTarget) -> Provenance:
    """How many of the runs this board counts are synthetic demo data, and how many another
    benchmark published (services.imports) and this site graded, per source: counted when the
    board is computed (``snapshot.provenance_counts``), read back with it."""
    stored = snapshot.read(hardware=hardware, parts=("provenance",)).parts["provenance"]
    sources = [(name, runs) for name, runs in stored["sources"]]
    return Provenance(synthetic=stored["synthetic"], sources=sources)


def budget_choices() -> list[tuple[str, str]]:
    """(key, label) of every wall budget a published run declared, the shortest first: what
    the filter form offers (one query)."""
    declared = Run.objects.filter(published=True).order_by().values_list("budget_s", flat=True)
    found = snapshot.budget_counts_of(list(declared.distinct()))
    return [(budget.key, budget.label) for budget in found]


def ranked_hardware() -> list[HardwareTarget]:
    return list(HardwareTarget.objects.filter(is_ranked=True).order_by("name", "slug"))


def ranked_target(*, slug: str) -> HardwareTarget | None:
    return HardwareTarget.objects.filter(is_ranked=True, slug=slug).first()


def board(
    *,
    hardware: HardwareTarget,
    filters: BoardFilters = NO_FILTERS,
    sort: str = "rank",
    descending: bool | None = None,
) -> Board:
    """An unknown sort key sorts by rank; ``descending`` None takes the column's usual way."""
    rows, problems, budgets, computed_at = _rows(hardware=hardware, filters=filters)
    sort = sort if sort in SORT_KEYS else "rank"
    descending = sort not in ASCENDING_FIRST if descending is None else descending
    return Board(
        hardware=hardware,
        problems=problems,
        rows=sort_rows(rows, key=sort, descending=descending),
        computed_at=computed_at,
        filters=filters,
        sort=sort,
        descending=descending,
        budgets=budgets,
    )


def sort_from_query(query: QueryDict) -> tuple[str, bool | None]:
    """``?sort=score&dir=asc``: the column, and its direction (None: the column's usual)."""
    return query.get("sort") or "rank", {"asc": False, "desc": True}.get(query.get("dir", ""))


def _rows(*, hardware: HardwareTarget, filters: BoardFilters):
    if filters.is_empty:
        return snapshot.stored_rows(hardware=hardware)
    records, computed_at = snapshot.stored_records(hardware=hardware)
    records = filter_records(records=records, filters=filters)
    budgets = snapshot.budget_counts(records.runs)
    return snapshot.board_rows(records=records), records.problems, budgets, computed_at


def sort_rows(rows: list[BoardRow], *, key: str, descending: bool) -> list[BoardRow]:
    """Stable on the rank order; rows missing the figure go last either way."""
    present = [row for row in rows if getattr(row, key) is not None]
    missing = [row for row in rows if getattr(row, key) is None]
    present.sort(key=lambda row: _sortable(getattr(row, key)), reverse=descending)
    return present + missing


def _sortable(value):
    return value.casefold() if isinstance(value, str) else value


def filter_records(*, records: Records, filters: BoardFilters) -> Records:
    """The records left by the filters; a category filter also narrows the problems."""
    if filters.is_empty:
        return records
    keep_problem = np.array([_admits_problem(filters, p) for p in records.problems], dtype=bool)
    keep_config = np.array([filters.admits(config) for config in records.configs], dtype=bool)
    runs = records.runs
    chosen = keep_config[runs.config] & keep_problem[runs.problem] & _in_dates(runs, filters)
    if filters.budget:
        chosen &= np.isin(snapshot.budget_keys(runs.budget_s), filters.budget)
    if filters.verified:
        chosen &= runs.verified
    renumbered = np.cumsum(keep_problem) - 1
    table = runs.take(chosen)
    problems = list(compress(records.problems, keep_problem))
    return replace(
        records, problems=problems, runs=replace(table, problem=renumbered[table.problem])
    )


def _admits_problem(filters: BoardFilters, problem: ProblemRef) -> bool:
    return not filters.category or problem.category in filters.category


def _in_dates(runs: snapshot.RunTable, filters: BoardFilters) -> np.ndarray:
    # ISO timestamps compare as text: "2026-01-02T09:00:00+00:00" >= "2026-01-02".
    chosen = np.ones(len(runs), dtype=bool)
    if filters.since:
        chosen &= runs.created >= filters.since.isoformat()
    if filters.until:
        chosen &= runs.created < (filters.until + timedelta(days=1)).isoformat()
    return chosen
