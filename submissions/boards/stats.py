"""Board arithmetic: pure functions over numpy arrays, no Django.

A configuration's score is the mean over the active problems of its mean run score per problem,
a problem without a run counting 0; its 95% interval resamples runs within each problem with a
fixed seed, so a page shows the same interval on every load; ranks tie where intervals overlap.
Missing figures are NaN in the arrays and None in the results.
"""

import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

RESAMPLES = 1000
LEVEL = 0.95
SEED = 20260101
# fast_p: the share of problems with a correct run faster than eager by more than p times.
FAST_P_THRESHOLDS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
# Caps one bootstrap block (resamples x runs) at about 16 MB of float64.
BLOCK_ELEMENTS = 2_000_000

T = TypeVar("T")


@dataclass(frozen=True)
class RunArrays:
    """One configuration's runs as parallel arrays; ``problem`` indexes the active problems."""

    problem: np.ndarray
    score: np.ndarray
    ok: np.ndarray
    correct_visible: np.ndarray
    correct_hidden: np.ndarray
    speedup_eager: np.ndarray
    speedup_compile: np.ndarray
    tokens: np.ndarray
    cost_usd: np.ndarray
    wall_time_s: np.ndarray


@dataclass(frozen=True)
class Summary:
    score: float
    ci_low: float
    ci_high: float
    attempted: int
    problem_count: int
    pass_visible: float
    pass_hidden: float
    gap: float
    speedup_eager: float | None
    speedup_compile: float | None
    fast_1: float
    fast_p: tuple[float, ...]  # at FAST_P_THRESHOLDS (fast_1 is the one at 1.0)
    median_tokens: float | None
    median_cost_usd: float | None
    median_wall_s: float | None
    runs: int
    # last, so that the CSV's earlier columns keep their places
    pass_all: float  # share of runs that passed every gate (verdict ok)


def summarize(*, runs: RunArrays, problem_count: int, seed: int) -> Summary:
    low, high = bootstrap_interval(
        problems=runs.problem, scores=runs.score, problem_count=problem_count, seed=seed
    )
    visible, hidden = share(runs.correct_visible), share(runs.correct_hidden)
    return Summary(
        score=config_score(problems=runs.problem, scores=runs.score, problem_count=problem_count),
        ci_low=low,
        ci_high=high,
        attempted=int(np.unique(runs.problem).size),
        problem_count=problem_count,
        pass_visible=visible,
        pass_hidden=hidden,
        gap=visible - hidden,
        pass_all=share(runs.ok),
        speedup_eager=geomean(runs.speedup_eager[runs.ok]),
        speedup_compile=geomean(runs.speedup_compile[runs.ok]),
        fast_1=fast_p(runs=runs, problem_count=problem_count, threshold=1.0),
        fast_p=tuple(
            fast_p(runs=runs, problem_count=problem_count, threshold=threshold)
            for threshold in FAST_P_THRESHOLDS
        ),
        median_tokens=median(runs.tokens),
        median_cost_usd=median(runs.cost_usd),
        median_wall_s=median(runs.wall_time_s),
        runs=int(runs.problem.size),
    )


def config_seed(key: str) -> int:
    """A configuration's own seed: its interval depends on its runs only, not on the others."""
    return SEED ^ zlib.crc32(key.encode())


def problem_means(*, problems: np.ndarray, scores: np.ndarray, problem_count: int) -> np.ndarray:
    """Mean run score per problem, 0 where the configuration has no run."""
    sums = np.bincount(problems, weights=scores, minlength=problem_count)
    counts = np.bincount(problems, minlength=problem_count)
    return np.divide(sums, counts, out=np.zeros(problem_count), where=counts > 0)


def config_score(*, problems: np.ndarray, scores: np.ndarray, problem_count: int) -> float:
    if problem_count == 0:
        return 0.0
    means = problem_means(problems=problems, scores=scores, problem_count=problem_count)
    return float(means.sum() / problem_count)


def bootstrap_interval(
    *,
    problems: np.ndarray,
    scores: np.ndarray,
    problem_count: int,
    seed: int,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
) -> tuple[float, float]:
    """Percentile interval of the configuration score, resampling runs within each problem."""
    if problems.size == 0 or problem_count == 0:
        return 0.0, 0.0
    order = np.argsort(problems, kind="stable")
    problems, scores = problems[order], scores[order]
    sizes = np.bincount(problems)[problems].astype(np.int32)
    starts = np.searchsorted(problems, problems).astype(np.int32)
    # A resampled run adds score / (runs of its problem x problem count) to the score.
    weights = 1.0 / (sizes * problem_count)
    rng = np.random.default_rng(seed)
    totals = np.concatenate(
        [
            scores[_draw(rng=rng, sizes=sizes, starts=starts, count=count)] @ weights
            for count in _blocks(resamples=resamples, width=sizes.size)
        ]
    )
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(totals, [tail, 100 - tail])
    return float(low), float(high)


def _draw(*, rng, sizes: np.ndarray, starts: np.ndarray, count: int) -> np.ndarray:
    """``count`` rows of run indices, each run drawn among the runs of its own problem."""
    # float32 draws halve the cost; the clamp keeps a product rounded up to the size inside.
    offsets = rng.random((count, sizes.size), dtype=np.float32) * sizes.astype(np.float32)
    return starts + np.minimum(offsets.astype(np.int32), sizes - 1)


def _blocks(*, resamples: int, width: int) -> list[int]:
    step = max(1, BLOCK_ELEMENTS // width)
    return [min(step, resamples - start) for start in range(0, resamples, step)]


def tie_ranks(
    *, lows: Iterable[float], highs: Iterable[float], scores: Iterable[float]
) -> list[int]:
    """Rank = 1 + the number of rows whose lower bound is above this row's upper bound, and
    never worse than the rank of a row that scores no higher (a narrow interval under a wide
    one must not put a better score below a worse one)."""
    lows, highs = np.asarray(list(lows), dtype=float), np.asarray(list(highs), dtype=float)
    scores = np.asarray(list(scores), dtype=float)
    apart = 1 + (lows[None, :] > highs[:, None]).sum(axis=1)
    no_higher = scores[None, :] <= scores[:, None]  # [row, other]: other scores no higher
    worst = apart.size + 1  # above any rank: stands for "not a row that scores no higher"
    return np.where(no_higher, apart[None, :], worst).min(axis=1, initial=worst).tolist()


def competition_ranks(*, scores: Iterable[float]) -> list[int]:
    """Ranks of scores sorted best first, equal scores sharing one: 1, 2, 2, 4."""
    ranks: list[int] = []
    previous = None
    for n, score in enumerate(scores):
        ranks.append(ranks[-1] if n and score == previous else n + 1)
        previous = score
    return ranks


def share(flags: np.ndarray) -> float:
    return float(np.mean(flags)) if flags.size else 0.0


def geomean(values: np.ndarray) -> float | None:
    """Geometric mean of the positive figures; None when there is none."""
    values = values[np.isfinite(values) & (values > 0)]
    return float(np.exp(np.log(values).mean())) if values.size else None


def fast_p(*, runs: RunArrays, problem_count: int, threshold: float) -> float:
    """Share of the active problems with a correct run faster than eager by more than
    ``threshold`` times (fast_1: faster than eager at all)."""
    if problem_count == 0:
        return 0.0
    fast = runs.ok & (np.nan_to_num(runs.speedup_eager, nan=0.0) > threshold)
    return np.unique(runs.problem[fast]).size / problem_count


def median(values: np.ndarray) -> float | None:
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else None


def pareto_frontier(
    *, points: Iterable[T], key: Callable[[T], tuple[float | None, float | None]]
) -> list[T]:
    """The points no other point beats on both axes (x lower is better, y higher), by x.

    A point missing either figure is left out; of equal points the first one stands.
    """
    placed = [(key(point), n, point) for n, point in enumerate(points)]
    placed = [item for item in placed if None not in item[0]]
    placed.sort(key=lambda item: (item[0][0], -item[0][1], item[1]))
    frontier, best = [], -np.inf
    for (_, y), _, point in placed:
        if y > best:
            frontier.append(point)
            best = y
    return frontier
