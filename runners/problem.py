"""Problem folders: loading, validation, content versions and hidden-free copies.

Stdlib and PyYAML only, so the web process can list problems without importing torch.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runners.schema import EXTRA_PROBLEMS_ENV
from runners.shape_expr import ExprError, evaluate_expr, expr_names

CATEGORIES = ("pytorch-to-kernel", "triton-to-triton", "cuda-to-cuda")
# roofline: the peak fraction is the speed-of-light time over the measured one, for problems whose
# shapes span both bounds (decode- and prefill-sized GEMMs, say).
# speedup: no FLOP or byte formula is known (imported decks such as KernelBench), so there is no
# roofline: the score is the geomean speedup over the eager reference instead of a peak fraction.
REGIMES = ("compute", "memory", "roofline", "speedup")
PEAK_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
HIDDEN_CASES = (
    "edge",
    "scale-up",
    "scale-down",
    "alignment-stress",
    "asymmetric",
    "production",
)
# Every held-out set covers these; asymmetric and production-realistic shapes are expected of the
# deck's problems (tests/runners/test_deck.py) but not of every problem folder.
REQUIRED_CASES = HIDDEN_CASES[:4]
# Input distributions the reference process knows by name (runners.oracle.apply_distribution);
# a problem defines more under `cases`.
BUILT_IN_DISTRIBUTIONS = ("normal", "large", "offset", "uniform", "small")
DEFAULT_DISTRIBUTIONS = ("normal", "large", "offset")
STARTER_CATEGORIES = ("triton-to-triton", "cuda-to-cuda")
SHAPES_PLACEHOLDER = "{{visible_shapes}}"
MIN_SEEDS = 3
MIN_HIDDEN_SHAPES = 4


_REQUIRED_KEYS = {"slug", "title", "category", "regime", "peak_dtype", "flops", "bytes"}
_REQUIRED_KEYS |= {"outputs", "forbidden", "shapes", "seeds"}
# no_hidden: why a problem has no hidden.yaml (an import whose sizes cannot vary), said in place
# of held-out shapes.
_OPTIONAL_KEYS = {"distributions", "cases", "perturb_buffers", "time_cap_s", "no_hidden"}
_WORK_KEYS = ("flops", "bytes")  # optional under the speedup regime
_CHOICES = {"category": CATEGORIES, "regime": REGIMES, "peak_dtype": PEAK_DTYPES}
_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")
_CASE_KEYS = {"scale", "tolerance", "generator"}
_TIES_KEYS = {"values", "input", "dim"}


class ProblemError(ValueError):
    """A problem folder is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Case:
    """A named input distribution of problem.yaml's `cases` (a "stress case")."""

    scale: dict[int, float]  # input position -> factor on the base draw (floating inputs only)
    generator: str | None  # a function of reference.py drawing the inputs in place of get_inputs
    tolerance: dict[str, dict[str, float]]  # output name -> atol, rtol for this case's input sets


@dataclass(frozen=True)
class Ties:
    """An index output compared up to ties: the candidate's indices must be in range, distinct
    along `dim`, and select from input `input` the expected values of output `values`."""

    values: str
    input: int
    dim: int


@dataclass(frozen=True)
class Problem:
    slug: str
    title: str
    category: str
    regime: str
    peak_dtype: str
    flops_expr: str | None
    bytes_expr: str | None
    # Per output as written: {atol, rtol}, or {ties: {values, input, dim}} for an index output.
    outputs: dict[str, dict[str, Any]]
    forbidden: tuple[str, ...]
    distributions: tuple[str, ...]
    cases: dict[str, Case]
    perturb_buffers: tuple[str, ...]  # floating buffers of Model perturbed like its parameters
    visible: list[dict[str, int]]
    smoke: list[dict[str, int]]
    hidden: list[dict[str, int]]
    hidden_cases: list[str]
    seeds: list[int]
    hidden_seeds: list[int]
    time_cap_s: float | None
    path: Path
    version: str

    def flops(self, params: Mapping[str, float]) -> float | None:
        return None if self.flops_expr is None else evaluate_expr(self.flops_expr, params)

    def bytes(self, params: Mapping[str, float]) -> float | None:
        return None if self.bytes_expr is None else evaluate_expr(self.bytes_expr, params)

    @property
    def cpu_capable(self) -> bool:
        return bool(self.smoke)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self.visible[0])

    @property
    def starter_path(self) -> Path | None:
        starter = self.path / "starter.py"
        return starter if starter.is_file() else None

    @property
    def ties(self) -> dict[str, Ties]:
        """The index outputs compared up to ties, by name."""
        return {name: Ties(**rule["ties"]) for name, rule in self.outputs.items() if "ties" in rule}

    def tolerance_for(self, distribution: str) -> list[dict[str, Any]]:
        """How each output (in the order outputs come back) is compared on an input set of this
        distribution: its atol and rtol (the case's where it gives them), or for an index output
        its ties rule with the values output and the input named by position."""
        names = sorted(self.outputs)
        case = self.cases.get(distribution)
        rules: list[dict[str, Any]] = []
        for name in names:
            ties = self.ties.get(name)
            if ties:
                position = names.index(ties.values)
                rules.append({"ties": {"values": position, "input": ties.input, "dim": ties.dim}})
            else:
                tolerance = case.tolerance.get(name) if case else None
                rules.append(dict(tolerance or self.outputs[name]))
        return rules


def problems_root() -> Path:
    return Path(__file__).resolve().parent / "problems"


def problem_roots() -> list[Path]:
    """The built-in deck, then each folder named in ARENA_EXTRA_PROBLEMS (os.pathsep-separated),
    which holds imported decks that are not part of this repository."""
    extra = [Path(p) for p in os.environ.get(EXTRA_PROBLEMS_ENV, "").split(os.pathsep) if p]
    for root in extra:
        if not root.is_dir():
            raise ProblemError(f"{EXTRA_PROBLEMS_ENV}: {root} is not a folder")
    return [problems_root(), *(root.resolve() for root in extra)]


def problem_folders() -> dict[str, Path]:
    """Every problem folder of every root by slug; a slug found twice is an error."""
    folders: dict[str, Path] = {}
    for root in dict.fromkeys(problem_roots()):
        for folder in sorted(p for p in root.iterdir() if (p / "problem.yaml").is_file()):
            if folder.name in folders:
                raise ProblemError(
                    f"problem {folder.name!r} is in both {folders[folder.name].parent} and "
                    f"{root} (check {EXTRA_PROBLEMS_ENV})"
                )
            folders[folder.name] = folder
    return folders


def list_problems() -> list[Problem]:
    folders = problem_folders()
    return [load_problem(folders[slug]) for slug in sorted(folders)]


def load_problem(slug_or_path: str | Path, *, require_hidden: bool = True) -> Problem:
    """Load and validate a problem folder, given its slug in the deck or its path.

    A hidden-free copy (see copy_without_hidden) loads with require_hidden=False and has no
    hidden shapes or seeds.
    """
    folder = _resolve_folder(slug_or_path)
    spec = _read_yaml(folder / "problem.yaml")
    _check_fields(folder, spec)
    _check_files(folder, spec["category"], require_hidden and "no_hidden" not in spec)
    visible, smoke = _read_shapes(spec)
    names = set(visible[0])
    hidden, cases, hidden_seeds = _read_hidden(folder / "hidden.yaml", names, spec["seeds"])
    for field in _WORK_KEYS:
        if spec.get(field) is not None:
            _check_expr(spec[field], field, visible + smoke + hidden)
    outputs = _read_outputs(spec["outputs"])
    seeds = _read_seeds(spec["seeds"], "problem.yaml")
    input_cases = _read_cases(spec.get("cases"), outputs)
    distributions = _read_distributions(spec.get("distributions"), input_cases, len(seeds))
    return Problem(
        slug=spec["slug"],
        title=spec["title"],
        category=spec["category"],
        regime=spec["regime"],
        peak_dtype=spec["peak_dtype"],
        flops_expr=spec.get("flops"),
        bytes_expr=spec.get("bytes"),
        outputs=outputs,
        forbidden=_read_forbidden(spec["forbidden"]),
        distributions=distributions,
        cases=input_cases,
        perturb_buffers=_read_perturb_buffers(spec.get("perturb_buffers")),
        visible=visible,
        smoke=smoke,
        hidden=hidden,
        hidden_cases=cases,
        seeds=seeds,
        hidden_seeds=hidden_seeds,
        time_cap_s=_read_time_cap(spec.get("time_cap_s")),
        path=folder,
        version=folder_version(folder),
    )


def folder_version(folder: Path) -> str:
    """sha256 over sorted relative POSIX paths and bytes of every file, hidden.yaml included."""
    digest = hashlib.sha256()
    for path in _content_files(folder):
        data = path.read_bytes()
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def copy_without_hidden(problem: Problem, dest: Path) -> Path:
    """Copy the problem folder to dest (created) without hidden.yaml; files are made read-only."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in _content_files(problem.path):
        relative = path.relative_to(problem.path)
        if relative.as_posix() == "hidden.yaml":
            continue
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        target.chmod(0o444)
    return dest


def _resolve_folder(slug_or_path: str | Path) -> Path:
    candidate = Path(slug_or_path)
    if isinstance(slug_or_path, str) and "/" not in slug_or_path:
        candidate = problem_folders().get(slug_or_path, problems_root() / slug_or_path)
    if not (candidate / "problem.yaml").is_file():
        raise ProblemError(f"{candidate}: no problem.yaml (unknown problem {str(slug_or_path)!r})")
    return candidate.resolve()


def _content_files(folder: Path) -> list[Path]:
    def hidden_part(path: Path) -> bool:
        parts = path.relative_to(folder).parts
        return any(p.startswith(".") or p == "__pycache__" for p in parts)

    files = (p for p in folder.rglob("*") if p.is_file() and not hidden_part(p))
    return sorted(files, key=lambda p: p.relative_to(folder).as_posix())


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ProblemError(f"{path.name}: cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise ProblemError(f"{path.name}: expected a mapping at the top level")
    return data


def _check_fields(folder: Path, spec: dict[str, Any]) -> None:
    required = _REQUIRED_KEYS - (set(_WORK_KEYS) if spec.get("regime") == "speedup" else set())
    missing = sorted(required - spec.keys())
    unknown = sorted(spec.keys() - _REQUIRED_KEYS - _OPTIONAL_KEYS)
    if missing or unknown:
        problem = f"missing field(s) {', '.join(missing)}" if missing else ""
        raise ProblemError(f"problem.yaml: {problem or 'unknown field(s) ' + ', '.join(unknown)}")
    for field in ("slug", "title", *(f for f in (*_WORK_KEYS, "no_hidden") if f in spec)):
        if not isinstance(spec[field], str) or not spec[field].strip():
            raise ProblemError(f"problem.yaml: field {field} must be a non-empty string")
    if "no_hidden" in spec and (folder / "hidden.yaml").exists():
        raise ProblemError(
            "problem.yaml: field no_hidden says there are no held-out shapes, "
            "but hidden.yaml exists"
        )
    if spec["slug"] != folder.name:
        raise ProblemError(f"problem.yaml: slug {spec['slug']!r} differs from {folder.name}/")
    for field, choices in _CHOICES.items():
        if spec[field] not in choices:
            expected = ", ".join(choices)
            raise ProblemError(f"problem.yaml: field {field} is {spec[field]!r}; one of {expected}")


def _check_files(folder: Path, category: str, require_hidden: bool) -> None:
    required = ["reference.py", "PROMPT.md"] + (["hidden.yaml"] if require_hidden else [])
    required += ["starter.py"] if category in STARTER_CATEGORIES else []
    for name in required:
        if not (folder / name).is_file():
            raise ProblemError(f"{name}: missing from {folder.name}/")
    if SHAPES_PLACEHOLDER not in (folder / "PROMPT.md").read_text(encoding="utf-8"):
        raise ProblemError(f"PROMPT.md: must contain {SHAPES_PLACEHOLDER}")


def _read_shapes(spec: dict[str, Any]) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
    shapes = spec["shapes"]
    if not isinstance(shapes, dict) or set(shapes) - {"visible", "smoke"}:
        raise ProblemError("problem.yaml: field shapes must map only visible and smoke to lists")
    visible = _read_shape_list(shapes.get("visible"), "problem.yaml", "shapes.visible", None)
    if not visible:
        raise ProblemError("problem.yaml: field shapes.visible must list at least one shape")
    names = set(visible[0])
    smoke = _read_shape_list(shapes.get("smoke") or [], "problem.yaml", "shapes.smoke", names)
    return visible, smoke


def _read_shape_list(
    raw: Any, file: str, field: str, names: set[str] | None
) -> list[dict[str, int]]:
    if not isinstance(raw, list):
        raise ProblemError(f"{file}: field {field} must be a list of shapes")
    shapes = []
    for index, shape in enumerate(raw):
        where = f"{file}: field {field}[{index}]"
        if not isinstance(shape, dict) or not shape:
            raise ProblemError(f"{where} must be a mapping of shape parameters")
        expected = set(shape) if names is None else names
        if set(shape) != expected:
            raise ProblemError(
                f"{where} has parameters {sorted(shape)}; expected {sorted(expected)}"
            )
        for key, value in shape.items():
            if type(value) is not int or value < 1:
                raise ProblemError(f"{where}.{key} must be a positive integer, got {value!r}")
        names = expected
        shapes.append(dict(shape))
    return shapes


def _read_hidden(
    path: Path, names: set[str], visible_seeds: Any
) -> tuple[list[dict[str, int]], list[str], list[int]]:
    if not path.is_file():
        return [], [], []
    spec = _read_yaml(path)
    if set(spec) != {"shapes", "seeds"}:
        raise ProblemError("hidden.yaml: expected exactly the fields shapes and seeds")
    raw = spec["shapes"]
    if not isinstance(raw, list) or len(raw) < MIN_HIDDEN_SHAPES:
        raise ProblemError(f"hidden.yaml: field shapes must list at least {MIN_HIDDEN_SHAPES}")
    cases = [shape.get("case") if isinstance(shape, dict) else None for shape in raw]
    for index, case in enumerate(cases):
        if case not in HIDDEN_CASES:
            raise ProblemError(
                f"hidden.yaml: field shapes[{index}].case is {case!r}; "
                f"expected one of {', '.join(HIDDEN_CASES)}"
            )
    if not set(REQUIRED_CASES) <= set(cases):
        absent = sorted(set(REQUIRED_CASES) - set(cases))
        raise ProblemError(f"hidden.yaml: field shapes lacks case(s) {', '.join(absent)}")
    params = [{k: v for k, v in shape.items() if k != "case"} for shape in raw]
    shapes = _read_shape_list(params, "hidden.yaml", "shapes", names)
    seeds = _read_seeds(spec["seeds"], "hidden.yaml")
    if isinstance(visible_seeds, list) and set(seeds) & set(visible_seeds):
        raise ProblemError("hidden.yaml: field seeds must differ from the visible seeds")
    return shapes, cases, seeds


def _read_seeds(raw: Any, file: str) -> list[int]:
    if not isinstance(raw, list) or any(type(seed) is not int for seed in raw):
        raise ProblemError(f"{file}: field seeds must be a list of integers")
    if len(set(raw)) < MIN_SEEDS:
        raise ProblemError(f"{file}: field seeds needs at least {MIN_SEEDS} distinct seeds")
    return list(raw)


def _read_outputs(raw: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(raw, dict) or not raw:
        raise ProblemError("problem.yaml: field outputs must map output names to tolerances")
    names = sorted(raw)
    if names != ["out"] and names != [f"out{i}" for i in range(len(names))]:
        raise ProblemError(f"problem.yaml: field outputs names {names}; use out, or out0, out1...")
    return {
        name: _read_ties(name, raw)
        if isinstance(raw[name], dict) and "ties" in raw[name]
        else _read_tolerance(f"outputs.{name}", raw[name])
        for name in names
    }


def _read_ties(name: str, outputs: dict[str, Any]) -> dict[str, Any]:
    """{ties: {values, input, dim}}: `values` names another output compared by tolerance."""
    field, rule = f"outputs.{name}", outputs[name]
    ties = rule["ties"]
    if set(rule) != {"ties"} or not isinstance(ties, dict) or set(ties) != _TIES_KEYS:
        raise ProblemError(
            f"problem.yaml: field {field} must be {{ties: {{values, input, dim}}}} exactly"
        )
    values = ties["values"]
    other = outputs.get(values) if isinstance(values, str) and values != name else None
    if not isinstance(other, dict) or "ties" in other:
        raise ProblemError(
            f"problem.yaml: field {field}.ties.values is {values!r}; name another output "
            "compared by atol and rtol (the values the indices select)"
        )
    for key in ("input", "dim"):
        if type(ties[key]) is not int or (key == "input" and ties[key] < 0):
            kind = "an input position (0, 1, ...)" if key == "input" else "an integer"
            raise ProblemError(f"problem.yaml: field {field}.ties.{key} must be {kind}")
    return {"ties": {"values": values, "input": ties["input"], "dim": ties["dim"]}}


def _read_tolerance(field: str, raw: Any) -> dict[str, float]:
    if not isinstance(raw, dict) or set(raw) != {"atol", "rtol"}:
        raise ProblemError(f"problem.yaml: field {field} must have exactly atol and rtol")
    tolerance = {}
    for key in ("atol", "rtol"):
        # PyYAML reads 1e-5 (no dot) as a string, so numeric strings are accepted.
        value = _as_float(raw[key])
        if isinstance(raw[key], bool) or not 0 <= value < math.inf:
            raise ProblemError(f"problem.yaml: field {field}.{key} must be a number >= 0")
        tolerance[key] = value
    return tolerance


def _as_float(raw: Any) -> float:
    try:
        return float(raw)
    except (TypeError, ValueError):
        return math.nan


def _read_forbidden(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise ProblemError("problem.yaml: field forbidden must be a list of dotted names")
    for name in raw:
        if not _DOTTED_NAME.match(name):
            raise ProblemError(f"problem.yaml: field forbidden has {name!r}, not a dotted name")
    return tuple(raw)


def _read_distributions(raw: Any, cases: dict[str, Case], seeds: int) -> tuple[str, ...]:
    """The input sets' distributions, cycled over the seeds; every name built in or a case, and
    every case drawn by one of the visible seeds (a case past them would never run)."""
    if raw is None:
        raw = list(DEFAULT_DISTRIBUTIONS)
    valid = isinstance(raw, list) and all(isinstance(d, str) and d for d in raw)
    if not valid or not raw or len(set(raw)) != len(raw):
        raise ProblemError("problem.yaml: field distributions must list distinct names")
    for name in raw:
        if name not in BUILT_IN_DISTRIBUTIONS and name not in cases:
            raise ProblemError(
                f"problem.yaml: field distributions has {name!r}, neither built in "
                f"({', '.join(BUILT_IN_DISTRIBUTIONS)}) nor defined under cases"
            )
    for name in cases:
        if name not in raw[:seeds]:
            where = f"at position {raw.index(name) + 1}" if name in raw else "not"
            raise ProblemError(
                f"problem.yaml: field cases.{name} is listed {where} in distributions, which "
                f"the {seeds} seeds cycle through from the first: no input set would draw it"
            )
    return tuple(raw)


def _read_cases(raw: Any, outputs: dict[str, dict[str, Any]]) -> dict[str, Case]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ProblemError("problem.yaml: field cases must map case names to their settings")
    return {name: _read_case(name, spec, outputs) for name, spec in raw.items()}


def _read_case(name: Any, spec: Any, outputs: dict[str, dict[str, Any]]) -> Case:
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise ProblemError(f"problem.yaml: field cases has {name!r}, not an identifier")
    field = f"cases.{name}"
    if not isinstance(spec, dict) or set(spec) - _CASE_KEYS:
        raise ProblemError(
            f"problem.yaml: field {field} must be a mapping of {', '.join(sorted(_CASE_KEYS))}"
        )
    if name in BUILT_IN_DISTRIBUTIONS and set(spec) - {"tolerance"}:
        raise ProblemError(
            f"problem.yaml: field {field} names a built-in distribution, which may carry only "
            "a tolerance; give a scaled or generated case a name of its own"
        )
    generator = spec.get("generator")
    if generator is not None and not (isinstance(generator, str) and _IDENTIFIER.match(generator)):
        raise ProblemError(
            f"problem.yaml: field {field}.generator must name a function of reference.py"
        )
    return Case(
        scale=_read_scale(f"{field}.scale", spec.get("scale", {})),
        generator=generator,
        tolerance=_read_case_tolerance(f"{field}.tolerance", spec.get("tolerance", {}), outputs),
    )


def _read_scale(field: str, raw: Any) -> dict[int, float]:
    if not isinstance(raw, dict):
        raise ProblemError(f"problem.yaml: field {field} must map input positions to factors")
    scale = {}
    for position, factor in raw.items():
        if type(position) is not int or position < 0:
            raise ProblemError(
                f"problem.yaml: field {field} has key {position!r}; input positions are 0, 1, ..."
            )
        value = _as_float(factor)
        if isinstance(factor, bool) or not math.isfinite(value) or value == 0:
            raise ProblemError(
                f"problem.yaml: field {field}.{position} must be a finite non-zero number"
            )
        scale[position] = value
    return scale


def _read_case_tolerance(
    field: str, raw: Any, outputs: dict[str, dict[str, Any]]
) -> dict[str, dict[str, float]]:
    if not isinstance(raw, dict):
        raise ProblemError(f"problem.yaml: field {field} must map output names to atol and rtol")
    for name in raw:
        if name not in outputs:
            raise ProblemError(f"problem.yaml: field {field} names {name!r}, not an output")
        if "ties" in outputs[name]:
            values = outputs[name]["ties"]["values"]
            raise ProblemError(
                f"problem.yaml: field {field}.{name}: {name} is compared up to ties; "
                f"give the tolerance of its values output {values}"
            )
    return {name: _read_tolerance(f"{field}.{name}", rule) for name, rule in raw.items()}


def _read_perturb_buffers(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    valid = isinstance(raw, list) and all(isinstance(n, str) and _DOTTED_NAME.match(n) for n in raw)
    if not valid or len(set(raw)) != len(raw):
        raise ProblemError(
            "problem.yaml: field perturb_buffers must list distinct buffer names of Model "
            "(identifiers, dotted for a submodule's: block.weight_scale)"
        )
    return tuple(raw)


def _read_time_cap(raw: Any) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not raw > 0:
        raise ProblemError("problem.yaml: field time_cap_s must be a positive number of seconds")
    return float(raw)


def _check_expr(expr: str, field: str, shapes: list[dict[str, int]]) -> None:
    try:
        unknown = expr_names(expr) - set(shapes[0])
    except SyntaxError as exc:
        raise ProblemError(f"problem.yaml: field {field} cannot be parsed: {exc.msg}") from None
    if unknown:
        raise ProblemError(f"problem.yaml: field {field} uses unknown name(s) {sorted(unknown)}")
    for shape in shapes:
        try:
            evaluate_expr(expr, shape)
        except ExprError as exc:
            raise ProblemError(f"problem.yaml: field {field}: {exc}") from None
