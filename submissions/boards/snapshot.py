"""The board snapshot of one hardware target: its counted runs as compact records, and its rows.

``refresh_board`` recomputes it (the services call it when an evaluation completes or a run is
published, withdrawn or re-graded); a missing snapshot, or one of an older ``FORMAT_VERSION``, is
computed on first read. Pages read it in one query and filtered boards are recomputed from its
records, so no request runs the bootstrap over the database.

A run counts when it is published, on ranked hardware, on an active problem, and has a headline
evaluation. Its score is that evaluation's score, 0 when null or when the verdict is a failure of
the candidate's; a grader failure (infra) scores for no one until a maintainer re-grades the run.
"""

import math
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Count, Q
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from submissions.boards import configs, stats
from submissions.boards.configs import ConfigRef
from submissions.models import (
    BoardSnapshot,
    Evaluation,
    HardwareTarget,
    Problem,
    Run,
)

FORMAT_VERSION = 8  # 2: grader failures left out of the rows; 3: integrity exclusions;
# 4: each run's declared budget and whether a verified campaign launched it, the budgets counted;
# 5: the rows' fast_p curve; ranks never below a lower score; 6: the runs' provenance;
# 7: the rows' pass_all; 8: the runs' speedups as stored with their grades
Verdict = Evaluation.Verdict

# The matrix's failure chips. A run whose timing was rejected produced no time the board can
# trust, which ends it like a crash; a missing solution is a static failure (nothing to build).
FAILURE_KINDS = {
    Verdict.MISSING_SOLUTION: "static",
    Verdict.SYNTAX_ERROR: "static",
    Verdict.FORBIDDEN: "static",
    Verdict.BUILD_ERROR: "build",
    Verdict.INCORRECT: "wrong_visible",
    Verdict.INCORRECT_HIDDEN: "wrong_hidden",
    Verdict.TIMEOUT: "timeout",
    Verdict.RUNTIME_ERROR: "crash",
    Verdict.CRASHED: "crash",
    Verdict.RESOURCE_LIMIT: "crash",
    Verdict.TIMING_REJECTED: "crash",
    Verdict.INFRA_ERROR: "infra",
}


def failure_kind(verdict: str) -> str:
    """The chip of a failed verdict ("" for ok); a verdict-less grader failure is infra."""
    return "" if verdict == Verdict.OK else FAILURE_KINDS.get(verdict, "infra")


@dataclass(frozen=True)
class ProblemRef:
    slug: str
    title: str
    category: str


@dataclass(frozen=True)
class BoardRow(stats.Summary, ConfigRef):
    """A configuration's line on the board: its fields, its rank and the ``stats.Summary``
    figures."""

    rank: int


@dataclass(frozen=True)
class RunTable:
    """The counted runs as columns; ``config`` and ``problem`` index ``Records``' lists."""

    config: np.ndarray = field(metadata={"dtype": np.int64})
    problem: np.ndarray = field(metadata={"dtype": np.int64})
    score: np.ndarray = field(metadata={"dtype": float})
    hidden_score: np.ndarray = field(metadata={"dtype": float})
    ok: np.ndarray = field(metadata={"dtype": bool})
    correct_visible: np.ndarray = field(metadata={"dtype": bool})
    correct_hidden: np.ndarray = field(metadata={"dtype": bool})
    verdict: np.ndarray = field(metadata={"dtype": str})
    failure: np.ndarray = field(metadata={"dtype": str})
    speedup_eager: np.ndarray = field(metadata={"dtype": float})
    speedup_compile: np.ndarray = field(metadata={"dtype": float})
    tokens: np.ndarray = field(metadata={"dtype": float})
    cost_usd: np.ndarray = field(metadata={"dtype": float})
    wall_time_s: np.ndarray = field(metadata={"dtype": float})
    created: np.ndarray = field(metadata={"dtype": str})  # ISO 8601, local time
    uuid: np.ndarray = field(metadata={"dtype": str})
    budget_s: np.ndarray = field(metadata={"dtype": float})  # the declared wall budget, or NaN
    verified: np.ndarray = field(metadata={"dtype": bool})  # launched by a verified campaign

    @classmethod
    def from_json(cls, columns: dict[str, list]) -> "RunTable":
        return cls(**{f.name: _array(columns[f.name], f.metadata["dtype"]) for f in fields(cls)})

    def to_json(self) -> dict[str, list]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    def __len__(self) -> int:
        return self.config.size

    def take(self, selection: np.ndarray) -> "RunTable":
        """The runs a boolean mask or an index array selects, in that order."""
        return RunTable(**{f.name: getattr(self, f.name)[selection] for f in fields(self)})

    def arrays(self, selection: np.ndarray) -> stats.RunArrays:
        names = (f.name for f in fields(stats.RunArrays))
        return stats.RunArrays(**{name: getattr(self, name)[selection] for name in names})


def _array(values: list, dtype) -> np.ndarray:
    return np.array(values, dtype=dtype)  # None becomes NaN in a float column


def _plain(values: np.ndarray) -> list:
    if values.dtype.kind == "f":
        return [None if math.isnan(value) else value for value in values.tolist()]
    return values.tolist()


@dataclass(frozen=True)
class Records:
    problems: list[ProblemRef]
    configs: list[ConfigRef]
    runs: RunTable

    @classmethod
    def from_json(cls, data: dict) -> "Records":
        return cls(
            problems=[ProblemRef(**problem) for problem in data["problems"]],
            configs=[ConfigRef(**config) for config in data["configs"]],
            runs=RunTable.from_json(data["runs"]),
        )

    def to_json(self) -> dict:
        return {
            "problems": [asdict(problem) for problem in self.problems],
            "configs": [asdict(config) for config in self.configs],
            "runs": self.runs.to_json(),
        }


def counted(runs: RunTable) -> np.ndarray:
    """The runs a score counts: all but those the grader itself failed on, which count for no
    one (the matrix still marks them) until re-graded. Board, matrix and charts read it here."""
    return runs.failure != "infra"


def board_rows(*, records: Records) -> list[BoardRow]:
    """One row per configuration with a graded run, ordered by rank, then score."""
    graded = counted(records.runs)
    present = np.unique(records.runs.config[graded]).tolist()
    summaries = [_summary(records=records, config=n, graded=graded) for n in present]
    ranks = stats.tie_ranks(
        lows=[s.ci_low for s in summaries],
        highs=[s.ci_high for s in summaries],
        scores=[s.score for s in summaries],
    )
    rows = [
        BoardRow(rank=rank, **asdict(records.configs[n]), **asdict(summary))
        for rank, n, summary in zip(ranks, present, summaries, strict=True)
    ]
    return sorted(rows, key=lambda row: (row.rank, -row.score, row.config_key))


def _summary(*, records: Records, config: int, graded: np.ndarray) -> stats.Summary:
    return stats.summarize(
        runs=records.runs.arrays((records.runs.config == config) & graded),
        problem_count=len(records.problems),
        seed=stats.config_seed(records.configs[config].config_key),
    )


def counted_runs(*, hardware_id: int):
    """The runs a board of this hardware counts (see the module's docstring)."""
    return configs.counted_runs().filter(
        configs.RANKED_RUN_PROBLEMS, hardware_id=hardware_id, hardware__is_ranked=True
    )


def build_records(*, hardware_id: int) -> Records:
    """The counted runs of one hardware target, read in a fixed number of queries."""
    runs = counted_runs(hardware_id=hardware_id)
    active = Problem.objects.filter(configs.RANKED_PROBLEMS).only("slug", "title", "category")
    problems = list(active.order_by("slug"))
    values = list(
        runs.order_by("created_at", "pk").values(
            *RUN_VALUES, *configs.CONFIG_VALUES, *configs.OUTCOME_VALUES
        )
    )
    refs = _configs(values)
    table = _table(
        values,
        problems={problem.pk: n for n, problem in enumerate(problems)},
        config_index={ref.config_key: n for n, ref in enumerate(refs)},
    )
    return Records(problems=[_problem_ref(p) for p in problems], configs=refs, runs=table)


RUN_VALUES = (
    "uuid",
    "problem_id",
    "created_at",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "wall_time_s",
    "budget_s",
    "campaign_launch",
    "headline_evaluation_id",
    "headline_evaluation__speedup_eager",  # stored with the grade (runners.contract)
    "headline_evaluation__speedup_compile",
)


def _problem_ref(problem: Problem) -> ProblemRef:
    return ProblemRef(slug=problem.slug, title=problem.title, category=problem.category)


def _configs(values: list[dict]) -> list[ConfigRef]:
    refs = {ref.config_key: ref for ref in (ConfigRef(**configs.config_fields(v)) for v in values)}
    return sorted(refs.values(), key=lambda ref: ref.config_key)


def _table(values: list[dict], *, problems: dict, config_index: dict) -> RunTable:
    columns = {f.name: [] for f in fields(RunTable)}
    for value in values:
        record = _record(
            value, problem=problems[value["problem_id"]], config=config_index[_key(value)]
        )
        for name, item in record.items():
            columns[name].append(item)
    return RunTable.from_json(columns)


def _key(value: dict) -> str:
    return configs.config_key(
        model_slug=value["language_model__slug"],
        harness_slug=value["harness__slug"],
        effort=value["effort"],
    )


def _record(value: dict, *, problem: int, config: int) -> dict:
    verdict = value["headline_evaluation__verdict"]
    return {
        "config": config,
        "problem": problem,
        "score": configs.run_score(value),
        "hidden_score": value["headline_evaluation__hidden_score"],
        "ok": verdict == Verdict.OK,
        "correct_visible": bool(value["headline_evaluation__correct_visible"]),
        "correct_hidden": bool(value["headline_evaluation__correct_hidden"]),
        "verdict": verdict,
        "failure": failure_kind(verdict),
        "speedup_eager": _rounded(value["headline_evaluation__speedup_eager"]),
        "speedup_compile": _rounded(value["headline_evaluation__speedup_compile"]),
        "tokens": _tokens(value),
        "cost_usd": _rounded(value["cost_usd"]),
        "wall_time_s": _rounded(value["wall_time_s"]),
        "created": timezone.localtime(value["created_at"]).isoformat(timespec="seconds"),
        "uuid": str(value["uuid"]),
        "budget_s": value["budget_s"],
        "verified": value["campaign_launch"] is not None,
    }


def _rounded(figure: float | None) -> float | None:
    # Six significant digits of a figure are beyond what any page shows and shrink the stored
    # records, which a filtered board reads; scores stay exact (they rank runs).
    return None if figure is None else float(f"{figure:.6g}")


def _tokens(value: dict) -> int | None:
    counts = [value["input_tokens"], value["output_tokens"]]
    return None if counts == [None, None] else sum(count or 0 for count in counts)


def refresh_board(*, hardware_id: int) -> BoardSnapshot:
    """Recompute and store the board of one hardware target: its records and its rows."""
    with transaction.atomic():
        # Refreshes of one board take turns, so the last to write read the newest runs.
        current = BoardSnapshot.objects.filter(hardware_id=hardware_id).defer("data")
        list(current.select_for_update().values_list("pk"))
        records = build_records(hardware_id=hardware_id)
        rows = [asdict(row) for row in board_rows(records=records)]
        budgets = [asdict(budget) for budget in budget_counts(records.runs)]
        provenance = provenance_counts(hardware_id=hardware_id)
        snapshot, _ = current.update_or_create(
            hardware_id=hardware_id,
            defaults={
                "data": {
                    **records.to_json(),
                    "rows": rows,
                    "budgets": budgets,
                    "provenance": provenance,
                },
                "format_version": FORMAT_VERSION,
                "computed_at": timezone.now(),
            },
        )
    return snapshot


def provenance_counts(*, hardware_id: int) -> dict:
    """Of the runs the board counts: how many are synthetic demo data, and how many each other
    benchmark published (``source_result``) and this site graded (one query)."""
    rows = (
        counted_runs(hardware_id=hardware_id)
        .order_by()
        .values("source_result__source")
        .annotate(runs=Count("pk"), synthetic=Count("pk", filter=Q(metadata__demo="synthetic")))
    )
    rows = list(rows)
    sources = [(r["source_result__source"], r["runs"]) for r in rows if r["source_result__source"]]
    return {"synthetic": sum(r["synthetic"] for r in rows), "sources": sorted(sources)}


def refresh_boards_for_run(*, run_id: int) -> None:
    """Recompute the board that counts this run, if the run still exists."""
    runs = Run.objects.filter(pk=run_id).values_list("hardware_id", flat=True)
    hardware_id = runs.first()
    if hardware_id is not None:
        refresh_board(hardware_id=hardware_id)


@dataclass(frozen=True)
class Stored:
    """The parts of a snapshot's data that a reader asked for, and when it was computed."""

    computed_at: datetime
    parts: dict[str, Any]


def read(*, hardware: HardwareTarget, parts: tuple[str, ...] = ()) -> Stored:
    """Only the named parts of the data travel from the database; stale means recomputed."""
    found = (
        BoardSnapshot.objects.filter(hardware=hardware, format_version=FORMAT_VERSION)
        .values("computed_at", **{part: KeyTransform(part, "data") for part in parts})
        .first()
    )
    if found is None:
        snapshot = refresh_board(hardware_id=hardware.pk)
        return Stored(snapshot.computed_at, {part: snapshot.data[part] for part in parts})
    return Stored(found.pop("computed_at"), found)


def stored_rows(
    *, hardware: HardwareTarget
) -> tuple[list[BoardRow], list[ProblemRef], list["BudgetCount"], datetime]:
    stored = read(hardware=hardware, parts=("rows", "problems", "budgets"))
    rows = [BoardRow(**row) for row in stored.parts["rows"]]
    problems = [ProblemRef(**problem) for problem in stored.parts["problems"]]
    budgets = [BudgetCount(**budget) for budget in stored.parts["budgets"]]
    return rows, problems, budgets, stored.computed_at


def stored_records(*, hardware: HardwareTarget) -> tuple[Records, datetime]:
    stored = read(hardware=hardware, parts=("problems", "configs", "runs"))
    return Records.from_json(stored.parts), stored.computed_at


# -- budgets --------------------------------------------------------------------------------------
NO_BUDGET = "none"  # the budget key of runs that declared none


@dataclass(frozen=True)
class BudgetCount:
    """One declared wall budget among a board's runs (``key``: whole seconds, or NO_BUDGET)."""

    key: str
    runs: int

    @property
    def label(self) -> str:
        return budget_label(self.key)


def budget_key(budget_s: float | None) -> str:
    """A declared budget in whole seconds, or NO_BUDGET (None or NaN)."""
    return NO_BUDGET if budget_s is None or math.isnan(budget_s) else str(round(budget_s))


def budget_keys(budget_s: np.ndarray) -> np.ndarray:
    """Each run's budget key (``budget_key``)."""
    return np.array([budget_key(value) for value in budget_s.tolist()], dtype=object)


def budget_counts(runs: RunTable) -> list[BudgetCount]:
    """The budgets among the runs, the shortest first and undeclared last."""
    return budget_counts_of(runs.budget_s)


def budget_counts_of(budget_s) -> list[BudgetCount]:
    """The budgets among these figures (seconds, None or NaN for none), with their counts."""
    keys, counts = np.unique([budget_key(value) for value in budget_s], return_counts=True)
    found = [BudgetCount(key=str(k), runs=int(n)) for k, n in zip(keys, counts, strict=True)]
    return sorted(found, key=lambda b: (b.key == NO_BUDGET, int(b.key) if b.key.isdigit() else 0))


def budget_label(key: str) -> str:
    """ "45 min", "2 h", "1 h 30 min", "90 s"; "no declared budget" for NO_BUDGET."""
    if key == NO_BUDGET or not key.isdigit():
        return "no declared budget"
    seconds = int(key)
    if seconds % 60:
        return f"{seconds} s"
    hours, minutes = divmod(seconds // 60, 60)
    parts = ([f"{hours} h"] if hours else []) + ([f"{minutes} min"] if minutes else [])
    return " ".join(parts)
