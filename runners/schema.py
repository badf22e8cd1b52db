"""The engine's result format, shared with the web platform.

Stdlib only: the web process imports this module and must never pull in torch.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

SCHEMA_VERSION = 1
# The variable naming more problem folders (os.pathsep-separated) that the engine reads beside
# its deck; the platform's web process and workers set it alike (runners.problem reads it).
EXTRA_PROBLEMS_ENV = "ARENA_EXTRA_PROBLEMS"


class Verdict:
    """The failure taxonomy; `ok` only when every gate passed."""

    OK = "ok"
    MISSING_SOLUTION = "missing_solution"
    SYNTAX_ERROR = "syntax_error"
    FORBIDDEN = "forbidden"
    BUILD_ERROR = "build_error"
    RUNTIME_ERROR = "runtime_error"
    INCORRECT = "incorrect"
    INCORRECT_HIDDEN = "incorrect_hidden"
    TIMEOUT = "timeout"
    RESOURCE_LIMIT = "resource_limit"
    CRASHED = "crashed"
    TIMING_REJECTED = "timing_rejected"
    INFRA_ERROR = "infra_error"

    ALL = (
        OK,
        MISSING_SOLUTION,
        SYNTAX_ERROR,
        FORBIDDEN,
        BUILD_ERROR,
        RUNTIME_ERROR,
        INCORRECT,
        INCORRECT_HIDDEN,
        TIMEOUT,
        RESOURCE_LIMIT,
        CRASHED,
        TIMING_REJECTED,
        INFRA_ERROR,
    )
    # How people read each verdict (the platform's pages and admin take these)
    LABELS = {
        OK: "OK",
        MISSING_SOLUTION: "Missing solution",
        SYNTAX_ERROR: "Syntax error",
        FORBIDDEN: "Forbidden",
        BUILD_ERROR: "Build error",
        RUNTIME_ERROR: "Runtime error",
        INCORRECT: "Incorrect",
        INCORRECT_HIDDEN: "Incorrect on held-out shapes",
        TIMEOUT: "Timeout",
        RESOURCE_LIMIT: "Resource limit",
        CRASHED: "Crashed",
        TIMING_REJECTED: "Timing rejected",
        INFRA_ERROR: "Infrastructure error",
    }


GATE_NAMES = ("static", "build", "correct_visible", "correct_hidden", "performance", "score")


def _known_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """Keys this version knows; newer engines may add fields that older readers ignore."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass
class TimingStats:
    median_us: float
    mean_us: float
    std_us: float
    min_us: float
    p10_us: float
    p90_us: float
    n: int
    rounds: int = 1  # separate measurements pooled; median_us: the mean of their medians
    round_medians_us: list[float] = field(default_factory=list)  # each round's, in order

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TimingStats | None:
        return None if data is None else cls(**_known_fields(cls, data))


@dataclass
class GateResult:
    name: str
    status: str  # pass | fail | skip
    verdict: str | None = None
    reason: str = ""
    duration_s: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateResult:
        return cls(**_known_fields(cls, data))


class GateFailure(Exception):
    """A gate's failure: its verdict, its reason, and what the gate's details add."""

    def __init__(self, verdict: str, reason: str, details: dict[str, Any] | None = None):
        super().__init__(reason)
        self.verdict, self.reason, self.details = verdict, reason, details or {}


@dataclass
class ShapeResult:
    set: str  # visible | hidden | smoke
    index: int
    params: dict[str, int]
    baseline_key: str = ""
    case: str | None = None
    correct: bool | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    mismatches: int | None = None
    worst_index: list[int] | None = None
    time: TimingStats | None = None
    tflops: float | None = None
    gbps: float | None = None
    peak_fraction: float | None = None
    baseline_eager: TimingStats | None = None
    baseline_compile: TimingStats | None = None
    # The problem's best library implementation (reference.py's Library), where it has one.
    baseline_library: TimingStats | None = None
    baseline_cached: bool = False
    # Kinds given up on this shape, in this grade or an earlier one (cached): not timed again.
    # Their timing ran past runners.performance.BASELINE_TIMEOUT_S, or (compile) torch.compile
    # recompiled the reference for another input set (runners.oracle).
    baseline_timed_out: list[str] = field(default_factory=list)
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    speedup_library: float | None = None
    # Kernel-to-kernel problems: the problem's starter.py timed like the baselines, its speedup,
    # and whether the starter itself is correct on this shape (held-out shapes).
    baseline_starter: TimingStats | None = None
    speedup_starter: float | None = None
    starter_correct: bool | None = None
    # Whether peak_fraction counts toward the run's score (visible) or hidden_score (held-out):
    # held-out shapes far below the visible ones' size (launch-bound) count for correctness only.
    scored: bool | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShapeResult:
        values = _known_fields(cls, data)
        for name in ("time", *(f"baseline_{kind}" for kind in BASELINE_KINDS)):
            values[name] = TimingStats.from_dict(values.get(name))
        return cls(**values)


# The reference timings a shape can carry (ShapeResult.baseline_<kind>), cached per shape.
BASELINE_KINDS = ("eager", "compile", "library", "starter")
# How a kernel-to-kernel run's held-out correctness compares with its starter's.
QUADRANTS = ("both_pass", "regression", "improvement", "both_fail")


@dataclass
class StarterComparison:
    """A kernel-to-kernel run against its starter on the held-out shapes run on this device.

    `quadrant`: both_pass, regression (the starter passes every held-out shape, the run does
    not), improvement (the reverse) or both_fail. `conditional_hidden_correct`: the share of the
    held-out shapes the starter gets right that the run gets right too (None when the starter
    gets none right)."""

    starter_hidden_correct: bool | None = None
    quadrant: str | None = None
    conditional_hidden_correct: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> StarterComparison | None:
        return None if data is None else cls(**_known_fields(cls, data))


@dataclass
class EvaluationResult:
    """One grading. `to_dict()` is always finite JSON: a NaN or infinite float anywhere in the
    result (the errors of a wildly wrong output, say) is written as null, and `non_finite` lists
    where, as paths such as `shapes[3].max_rel_err`, `score` or `gates[2].details.key`. Reading
    it back keeps the null and the list, so `from_dict(to_dict())` writes the same dict again."""

    problem: str
    problem_version: str
    device: str
    verdict: str
    reason: str = ""
    score: float | None = 0.0
    hidden_score: float | None = None
    correct_visible: bool = False
    correct_hidden: bool = False
    timings_comparable: bool = False
    gates: list[GateResult] = field(default_factory=list)
    shapes: list[ShapeResult] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    isolation: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, float] = field(default_factory=dict)
    engine_version: str = ""
    schema_version: int = SCHEMA_VERSION
    non_finite: list[str] = field(default_factory=list)
    # Kernel-to-kernel problems only (None for pytorch-to-kernel and for gradings that stopped
    # before the held-out gate).
    starter: StarterComparison | None = None

    def to_dict(self) -> dict[str, Any]:
        found: list[str] = []
        data = _finite(asdict(self), "", found)
        data["non_finite"] = list(dict.fromkeys([*self.non_finite, *found]))
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluationResult:
        values = _known_fields(cls, data)
        values["gates"] = [GateResult.from_dict(g) for g in values.get("gates", [])]
        values["shapes"] = [ShapeResult.from_dict(s) for s in values.get("shapes", [])]
        values["starter"] = StarterComparison.from_dict(values.get("starter"))
        return cls(**values)

    def gate(self, name: str) -> GateResult | None:
        return next((g for g in self.gates if g.name == name), None)


def _finite(value: Any, path: str, found: list[str]) -> Any:
    """`value` with every NaN or infinite float replaced by None, their paths added to `found`."""
    if isinstance(value, float) and not math.isfinite(value):
        found.append(path)
        return None
    if isinstance(value, dict):
        return {k: _finite(v, f"{path}.{k}" if path else str(k), found) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_finite(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    return value


@dataclass
class ProblemInfo:
    """One problem of the deck as `python -m runners problems --json` lists it.

    `statement` is PROMPT.md exactly as the agent pack gives it to agents (the visible shapes'
    table filled in); `visible_shapes` are the visible shapes' parameter dicts, in order. Neither
    holds anything held out."""

    slug: str
    title: str
    category: str
    regime: str
    version: str
    visible_count: int
    hidden_count: int
    peak_dtype: str = ""
    cpu_capable: bool = False
    statement: str = ""
    visible_shapes: list[dict[str, int]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProblemInfo:
        return cls(**_known_fields(cls, data))


@dataclass(frozen=True)
class BaselineKey:
    """What cached reference timings are keyed by; `key` is the text form,
    `version:shape:gpu:torch:t<timing protocol>`, with the shape as sorted `k=v,...`."""

    problem_version: str
    shape: str
    gpu: str
    torch_version: str
    protocol: int

    @property
    def key(self) -> str:
        parts = (self.problem_version, self.shape, self.gpu, self.torch_version)
        return ":".join(parts) + f":t{self.protocol}"

    def __str__(self) -> str:
        return self.key


# Neither the version, the shape nor the torch version holds a ':'; a GPU name may.
_BASELINE_KEY = re.compile(
    r"(?P<problem_version>[^:]+):(?P<shape>[^:]*):(?P<gpu>.+):(?P<torch_version>[^:]+)"
    r":t(?P<protocol>[0-9]{1,4})"
)


def baseline_key(
    problem_version: str, params: dict[str, int], gpu: str, torch_version: str, protocol: int
) -> str:
    shape = ",".join(f"{k}={params[k]}" for k in sorted(params))
    return BaselineKey(problem_version, shape, gpu, torch_version, protocol).key


def parse_baseline_key(key: str) -> BaselineKey | None:
    """The parts of a key `baseline_key` built; None for a key of another format (an older
    engine's, without the timing protocol)."""
    match = _BASELINE_KEY.fullmatch(key)
    if match is None:
        return None
    parts = match.groupdict()
    return BaselineKey(**parts | {"protocol": int(parts["protocol"])})
