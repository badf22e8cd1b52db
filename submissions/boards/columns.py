"""The board's columns, each written once: its figure, header, explanation, cell and sort.

A column's ``key`` names a field of ``snapshot.BoardRow`` (the configuration's fields and the
``stats.Summary`` figures): it is the sort key (``?sort=KEY``, the API's ``sort`` enum), the
name in the JSON and CSV exports, and the figure the cell shows. ``cell`` says how the cell is
drawn (``templates/includes/board_cell.html``). Adding a column is one entry here over a figure
the row has; a new figure is a ``stats.Summary`` field and its line in ``stats.summarize``.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    key: str  # the BoardRow field: sort key and export name
    label: str
    help: str  # the header's tooltip
    cell: str  # how board_cell.html draws it
    ascending_first: bool = False  # less is better, or it reads in alphabetical order
    numeric: bool = True


COLUMNS = (
    Column(
        "rank",
        "Rank",
        "1 + the number of rows whose whole interval lies above this one's",
        "rank",
        ascending_first=True,
    ),
    Column(
        "config_label",
        "Configuration",
        "Model · harness · effort",
        "config",
        ascending_first=True,
        numeric=False,
    ),
    Column(
        "score",
        "Score",
        "Mean over the active problems of the mean run score; a problem without a run counts 0",
        "score",
    ),
    Column(
        "ci_low",
        "95% interval",
        "Bootstrap interval: runs resampled within each problem",
        "interval",
    ),
    Column(
        "attempted",
        "Coverage",
        "Problems with at least one run, of the active problems",
        "coverage",
    ),
    Column(
        "pass_visible",
        "Pass visible",
        "Share of runs correct on the shapes the agent saw",
        "percent",
    ),
    Column(
        "pass_hidden",
        "Pass held-out",
        "Share of runs correct on the held-out shapes",
        "percent",
    ),
    Column("gap", "Gap", "Pass visible minus pass held-out", "gap", ascending_first=True),
    Column(
        "pass_all",
        "All gates",
        "Share of runs that passed every gate: correct on both sets of shapes, and timed "
        "without a refusal (a timing the grader distrusts, a forbidden call)",
        "percent",
    ),
    Column(
        "speedup_eager",
        "vs eager",
        "Geometric-mean speedup over PyTorch eager, correct runs",
        "speedup",
    ),
    Column(
        "speedup_compile",
        "vs compile",
        "Geometric-mean speedup over torch.compile, correct runs",
        "speedup",
    ),
    Column("fast_1", "fast₁", "Share of problems with a correct run faster than eager", "percent"),
    Column(
        "median_tokens",
        "Tokens",
        "Median input + output tokens per run",
        "tokens",
        ascending_first=True,
    ),
    Column("median_cost_usd", "Cost", "Median cost per run", "usd", ascending_first=True),
    Column(
        "median_wall_s", "Wall time", "Median wall time per run", "seconds", ascending_first=True
    ),
    Column("runs", "Runs", "Number of runs", "runs"),
)

# Figures a board can also be sorted by (the API, a bookmarked link) without a column of their
# own: they show inside the configuration's and the interval's cells.
MORE_SORT_KEYS = (
    ("model_name", True),
    ("harness_name", True),
    ("provider", True),
    ("effort", True),
    ("ci_high", False),
)

SORT_KEYS = (*(column.key for column in COLUMNS), *(key for key, _ in MORE_SORT_KEYS))
ASCENDING_FIRST = frozenset(
    [column.key for column in COLUMNS if column.ascending_first]
    + [key for key, ascending in MORE_SORT_KEYS if ascending]
)
