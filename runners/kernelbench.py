"""KernelBench level files as problem folders (`python -m runners import-kernelbench`).

A level file holds `class Model`, `get_inputs`, `get_init_inputs` and module-level size constants
(`batch_size = 16`). Its constants become the single visible shape; smoke shapes shrink them for
the CPU and held-out shapes vary one of them. Files are read with `ast`, never run: stdlib and
PyYAML only, like `runners.problem`. Whether the reference runs at its smoke shape is checked by
`runners.smoke_fit`, which the CLI hands to `import_level` unless told not to.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from runners.problem import REQUIRED_CASES

# KernelBench grades fp32 (its default precision) with atol = rtol = 1e-4:
# get_tolerance_for_precision in src/kernelbench/eval.py (commit 423217d, March 2026).
TOLERANCE = "1.0e-4"
SEEDS = (42, 123, 456)
HIDDEN_SEEDS = (7919, 104729, 1299709)
# Sizes at or above this are scaled; smaller ones (kernel sizes, strides, axes, head counts) are
# structure and stay as the file has them. Smoke shapes shrink sizes to no less than this.
SIZE_FLOOR = 16
SMOKE_BATCH = 3
# Names of structure, whatever their value: scaling them changes the model, not its size.
_STRUCTURAL = re.compile(r"kernel|stride|pad|dilation|group|head|patch|window|block|stage")
# Fixed sizes up to this (groups, heads, patches, chunks) must still divide a shrunk size that
# they divided; larger fixed ones are not taken for such constraints.
MAX_DIVISOR = 64
_BATCH = re.compile(r"batch")
_HELPERS = {"get_inputs", "get_init_inputs"}
_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.Div: operator.truediv,
}


class SmokeFit(Protocol):
    def __call__(
        self, reference: str, smoke: dict[str, int], visible: dict[str, int]
    ) -> tuple[dict[str, int] | None, str | None]: ...


class Unconvertible(ValueError):
    """A level file that cannot become a problem folder; the message is the reason."""


@dataclass
class Constants:
    """A file's module-level constants: integer sizes (params), statements computed from them
    (derived, re-run per shape), and which params the model reads itself (fixed)."""

    params: dict[str, int] = field(default_factory=dict)
    flattened: dict[str, str] = field(default_factory=dict)  # rebuilt sequence -> its statement
    derived: list[str] = field(default_factory=list)
    depends: dict[str, set[str]] = field(default_factory=dict)
    fixed: set[str] = field(default_factory=set)


@dataclass
class Converted:
    slug: str
    title: str
    source: str
    params: dict[str, int]
    smoke: dict[str, int] | None
    hidden: list[tuple[str, dict[str, int]]]
    no_hidden: str | None
    outputs: int
    reference: str
    # Where the smoke shape is not the shrunk one (runners.smoke_fit): grown, or none, and why.
    smoke_note: str | None = None


@dataclass
class ImportReport:
    level: int
    imported: list[Converted] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, reason)

    def summary(self) -> str:
        cpu = sum(1 for c in self.imported if c.smoke)
        held = sum(1 for c in self.imported if c.hidden)
        lines = [
            f"level {self.level}: {len(self.imported)} imported "
            f"({cpu} with CPU smoke shapes, {held} with held-out shapes), "
            f"{len(self.skipped)} not imported"
        ]
        lines += [f"  not imported: {name}: {reason}" for name, reason in self.skipped]
        notes = [c for c in self.imported if c.smoke_note]
        lines += [f"  smoke shape of {c.slug}: {c.smoke_note}" for c in notes]
        return "\n".join(lines)


def level_folder(checkout: Path, level: int) -> Path:
    """The checkout's levelN folder (the repository root or its KernelBench/ folder)."""
    for folder in (checkout / "KernelBench" / f"level{level}", checkout / f"level{level}"):
        if folder.is_dir():
            return folder
    raise FileNotFoundError(f"{checkout}: no KernelBench/level{level} or level{level} folder")


def import_level(
    checkout: Path, level: int, dest: Path, *, fit_smoke: SmokeFit | None = None
) -> ImportReport:
    """Convert every file of a level into dest (new or empty) and write IMPORT_REPORT.md. With
    `fit_smoke` (`runners.smoke_fit.fit`, as the CLI passes), each smoke shape is one the
    reference runs at."""
    source = level_folder(checkout, level)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FileExistsError(f"{dest}: the import needs a new or empty folder")
    report = ImportReport(level=level)
    for path in sorted(source.glob("*.py"), key=_file_order):
        try:
            text = path.read_text(encoding="utf-8")
            converted = convert(text, level=level, name=path.name, fit_smoke=fit_smoke)
        except (Unconvertible, UnicodeDecodeError) as exc:
            report.skipped.append((path.name, str(exc)))
            continue
        report.imported.append(converted)
    dest.mkdir(parents=True, exist_ok=True)
    for converted in report.imported:
        write_problem(converted, dest / converted.slug)
    (dest / "IMPORT_REPORT.md").write_text(render_report(report, source), encoding="utf-8")
    return report


def _file_order(path: Path) -> tuple[int, str]:
    number = path.name.split("_", 1)[0]
    return (int(number) if number.isdigit() else 1 << 30, path.name)


def convert(text: str, *, level: int, name: str, fit_smoke: SmokeFit | None = None) -> Converted:
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise Unconvertible(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    absent = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in defined]
    if absent:
        raise Unconvertible(f"no {', '.join(absent)} at module level")
    constants = read_constants(tree, text)
    if not constants.params:
        raise Unconvertible("no module-level integer size constants to make a shape of")
    constants.fixed = model_reads(tree, constants)
    scalable = [p for p in constants.params if _scalable(p, constants)]
    reference = reference_source(text, constants)
    smoke, smoke_note = smoke_shape(constants, scalable), None
    if smoke is not None and fit_smoke is not None:
        smoke, smoke_note = fit_smoke(reference, smoke, dict(constants.params))
    hidden = hidden_shapes(constants, scalable, smoke)
    stem = Path(name).stem
    return Converted(
        slug=_slug(level, stem),
        title=f"KernelBench L{level} {stem.replace('_', ' ').strip()}",
        source=f"level{level}/{name}",
        params=dict(constants.params),
        smoke=smoke,
        hidden=hidden,
        no_hidden=None if hidden else _no_hidden_reason(scalable, constants),
        outputs=_output_count(tree),
        reference=reference,
        smoke_note=smoke_note,
    )


def _slug(level: int, stem: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")
    return f"kb-l{level}-{words}"[:60].rstrip("-")


# -- constants ---------------------------------------------------------------------------------
def read_constants(tree: ast.Module, text: str) -> Constants:
    constants, values = Constants(), {}
    for node in tree.body:
        targets = _assigned(node)
        if not targets:
            continue
        names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        deps = set().union(*(constants.depends.get(n, {n}) for n in names)) & _sized(constants)
        value = _evaluate(node.value, values)
        bound = _bind(targets, value)
        if deps:
            constants.derived.append(ast.get_source_segment(text, node))
        for target, item in bound.items():
            values[target] = item
            if deps:
                constants.depends[target] = deps
            else:
                _add_param(constants, target, item)
    return constants


def _sized(constants: Constants) -> set[str]:
    return set(constants.params) | set(constants.flattened) | set(constants.depends)


def _assigned(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return [node.target]
    return []


def _bind(targets: list[ast.expr], value: Any) -> dict[str, Any]:
    """target name -> value, for `a = 1`, `a = b = 1` and `a, b = 1, 2` (None: unknown)."""
    bound = {}
    for target in targets:
        if isinstance(target, ast.Name):
            bound[target.id] = value
        elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            items = value if isinstance(value, tuple) and len(value) == len(target.elts) else None
            for index, element in enumerate(target.elts):
                bound[element.id] = None if items is None else items[index]
    return bound


def _evaluate(node: ast.expr, values: dict[str, Any]) -> Any:
    """Literals, names bound earlier and arithmetic on them; None for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values.get(node.id)
    if isinstance(node, ast.Tuple | ast.List):
        items = [_evaluate(e, values) for e in node.elts]
        if any(i is None for i in items):
            return None
        return tuple(items) if isinstance(node, ast.Tuple) else list(items)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _evaluate(node.operand, values)
        return -inner if isinstance(inner, int | float) and not isinstance(inner, bool) else None
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left, values), _evaluate(node.right, values)
        try:
            return None if None in (left, right) else _OPERATORS[type(node.op)](left, right)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            return None
    return None


def _size(value: Any) -> bool:
    return type(value) is int and value > 0


def _add_param(constants: Constants, name: str, value: Any) -> None:
    if _size(value):
        constants.params[name] = value
    elif isinstance(value, tuple | list) and value and all(_size(v) for v in value):
        items = [f"{name}_{i}" for i in range(len(value))]
        constants.params.update(zip(items, value, strict=True))
        brackets = "()" if isinstance(value, tuple) else "[]"
        comma = "," if len(items) == 1 and brackets == "()" else ""
        statement = f"{name} = {brackets[0]}{', '.join(items)}{comma}{brackets[1]}"
        constants.flattened[name] = statement
        constants.depends[name] = set(items)


def model_reads(tree: ast.Module, constants: Constants) -> set[str]:
    """Params that code other than get_inputs/get_init_inputs reads as globals: the candidate
    cannot see them, so they stay fixed at the file's values."""
    read = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name not in _HELPERS:
            names = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
            local = {n.id for n in names if isinstance(n.ctx, ast.Store)} | _arguments(node)
            read |= {n.id for n in names if isinstance(n.ctx, ast.Load)} - local
    fixed = set()
    for name in read:
        fixed |= constants.depends.get(name, {name}) & set(constants.params)
    return fixed


def _arguments(scope: ast.AST) -> set[str]:
    return {a.arg for n in ast.walk(scope) if isinstance(n, ast.arguments) for a in _all_args(n)}


def _all_args(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


def _scalable(name: str, constants: Constants) -> bool:
    value = constants.params[name]
    if name in constants.fixed:
        return False
    if is_batch(name):
        return value >= 2
    return value >= SIZE_FLOOR and not _STRUCTURAL.search(name.lower())


def is_batch(name: str) -> bool:
    return bool(_BATCH.search(name.lower()))


def _primary(scalable: list[str]) -> str | None:
    """The size held-out shapes vary: the batch if there is one, else the first size."""
    batch = [p for p in scalable if is_batch(p)]
    return (batch or scalable or [None])[0]


# -- shapes ------------------------------------------------------------------------------------
def smoke_shape(constants: Constants, scalable: list[str]) -> dict[str, int] | None:
    """Every scalable size shrunk by a power of two to between SIZE_FLOOR and twice that, keeping
    divisibility by the file's fixed sizes (channels by groups, width by heads); the batch to 3."""
    if not scalable:
        return None
    fixed = [v for p, v in constants.params.items() if p not in scalable and 2 <= v <= MAX_DIVISOR]
    shape = dict(constants.params)
    for name in scalable:
        value = shape[name]
        if is_batch(name):
            shape[name] = min(value, SMOKE_BATCH)
        else:
            shape[name] = shrink(value, [p for p in fixed if value % p == 0])
    return shape


def shrink(value: int, divisors: list[int]) -> int:
    best, factor = value, 2
    while value // factor >= SIZE_FLOOR:
        smaller = value // factor
        if all(smaller % d == 0 for d in divisors):
            best = smaller
        factor *= 2
    return best


def hidden_shapes(
    constants: Constants, scalable: list[str], smoke: dict[str, int] | None
) -> list[tuple[str, dict[str, int]]]:
    """Held-out shapes: the primary size at 1, 1.5x (at least +2), /4 and an odd neighbour,
    others as visible; and the smoke shape with the primary one smaller (the one the CPU runs),
    where there is a smoke shape."""
    primary = _primary(scalable)
    if primary is None:
        return []
    visible = constants.params
    size = visible[primary]
    odd = next(v for v in (size - 1, size + 1, size + 2) if v % 2 and v >= 2)
    candidates = [
        ("edge", {**visible, primary: 1}),
        ("scale-up", {**visible, primary: size + max(2, size // 2)}),
        ("scale-down", {**visible, primary: size // 4}),
        *([("scale-down", {**smoke, primary: smoke[primary] - 1})] if smoke else []),
        ("alignment-stress", {**visible, primary: odd}),
    ]
    shapes, seen = [], [visible, smoke]
    for case, shape in candidates:
        if min(shape.values()) >= 1 and shape not in seen:
            shapes.append((case, shape))
            seen.append(shape)
    if not set(REQUIRED_CASES) <= {case for case, _ in shapes}:
        return []
    return shapes


def _no_hidden_reason(scalable: list[str], constants: Constants) -> str:
    if not scalable and constants.fixed:
        return "the model reads its size constants itself, so no size can vary"
    if not scalable:
        return f"no size constant of {SIZE_FLOOR} or more (or a batch size) to vary"
    return "the sizes are too small to vary into every required held-out case"


def _output_count(tree: ast.Module) -> int:
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    forward = next((n for n in model.body if getattr(n, "name", "") == "forward"), None)
    returns = [n for n in ast.walk(forward) if isinstance(n, ast.Return)] if forward else []
    counts = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else 1 for r in returns}
    return counts.pop() if len(counts) == 1 else 1


# -- writing -----------------------------------------------------------------------------------
def reference_source(text: str, constants: Constants) -> str:
    """The file unchanged, then (if some constants are computed from sizes) defaults for the
    flattened sequence sizes and get_inputs/get_init_inputs wrapped to recompute them first."""
    ordered = list(constants.flattened.values()) + constants.derived
    if not ordered:
        return text
    globals_ = list(dict.fromkeys(name for s in ordered for name in _target_names(s)))
    defaults = [
        f"{p} = {v}"
        for p, v in constants.params.items()
        if any(p.startswith(f"{n}_") for n in constants.flattened)
    ]
    body = "\n".join(f"    {line}" for s in ordered for line in s.splitlines())
    return (
        text.rstrip()
        + "\n\n\n# Added by `python -m runners import-kernelbench`: the engine sets the size\n"
        + "# constants as module globals per shape; what is computed from them is recomputed\n"
        + "# before inputs and init arguments are drawn.\n"
        + "".join(f"{line}\n" for line in defaults)
        + "\n\ndef _arena_derive():\n"
        + f"    global {', '.join(globals_)}\n{body}\n\n\n"
        + "_arena_get_inputs, _arena_get_init_inputs = get_inputs, get_init_inputs\n\n\n"
        + "def get_inputs():\n    _arena_derive()\n    return _arena_get_inputs()\n\n\n"
        + "def get_init_inputs():\n    _arena_derive()\n    return _arena_get_init_inputs()\n"
    )


def _target_names(statement: str) -> list[str]:
    node = ast.parse(statement).body[0]
    return [n.id for t in _assigned(node) for n in ast.walk(t) if isinstance(n, ast.Name)]


def write_problem(converted: Converted, folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "problem.yaml").write_text(problem_yaml(converted), encoding="utf-8")
    (folder / "reference.py").write_text(converted.reference, encoding="utf-8")
    (folder / "PROMPT.md").write_text(prompt(converted), encoding="utf-8")
    if converted.hidden:
        (folder / "hidden.yaml").write_text(hidden_yaml(converted), encoding="utf-8")


def _flow(shape: dict[str, int], **extra: str) -> str:
    items = [f"{k}: {v}" for k, v in {**extra, **shape}.items()]
    return "{" + ", ".join(items) + "}"


def problem_yaml(converted: Converted) -> str:
    names = ["out"] if converted.outputs == 1 else [f"out{i}" for i in range(converted.outputs)]
    tolerance = f"{{atol: {TOLERANCE}, rtol: {TOLERANCE}}}"
    smoke = f"\n    - {_flow(converted.smoke)}" if converted.smoke else " []"
    lines = [
        f"# Imported from KernelBench {converted.source} by python -m runners import-kernelbench.",
        f"slug: {converted.slug}",
        f"title: {_quoted(converted.title)}",
        "category: pytorch-to-kernel",
        "# No FLOP or byte formula is known for an imported model: scored by speedup over eager.",
        "regime: speedup",
        "peak_dtype: fp32",
        "# KernelBench's fp32 tolerance (get_tolerance_for_precision in its eval.py).",
        "outputs:",
        *(f"  {name}: {tolerance}" for name in names),
        "forbidden: []",
        "# KernelBench's own inputs (get_inputs) with no rescaling.",
        "distributions: [normal]",
        *([f"no_hidden: {_quoted(converted.no_hidden)}"] if converted.no_hidden else []),
        "shapes:",
        "  # The file's own constants.",
        f"  visible:\n    - {_flow(converted.params)}",
        f"  smoke:{smoke}",
        f"seeds: [{', '.join(map(str, SEEDS))}]",
    ]
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def hidden_yaml(converted: Converted) -> str:
    shapes = [f"  - {_flow(shape, case=case)}" for case, shape in converted.hidden]
    return "\n".join(["shapes:", *shapes, f"seeds: [{', '.join(map(str, HIDDEN_SEEDS))}]"]) + "\n"


def prompt(converted: Converted) -> str:
    held_out = (
        "Your kernel is also graded on shapes you are not shown (the sizes above scaled up and "
        "down, and odd sizes), so do not specialise to the table."
        if converted.hidden
        else f"This problem has no held-out shapes: {converted.no_hidden}."
    )
    return f"""# {converted.title}

`reference.py` is KernelBench's `{converted.source}`: `Model`, `get_inputs` and
`get_init_inputs`. Write a faster implementation with custom kernels (Triton or CUDA).

## Shapes you are given

{{{{visible_shapes}}}}

The engine sets these constants as `reference.py`'s module globals before it calls `get_inputs`
and `get_init_inputs`. {held_out}

## Contract

- Deliver one file, `solution.py`, defining `class ModelNew(nn.Module)` whose constructor takes
  `get_init_inputs()`'s arguments like `Model`'s, and loads the reference's `state_dict` with
  `strict=True`.
- `forward` takes `get_inputs()`'s tensors and returns what `Model.forward` returns, in fp32.
- Tolerance: atol {TOLERANCE} and rtol {TOLERANCE} against the reference (KernelBench's own).
- Score: speedup over the eager PyTorch reference (no roofline is known for this model).
- Solutions are rejected for timer patching, threads, subprocesses, network access, `exec`/`eval`,
  loading native libraries with ctypes and introspection of the caller; CUDA graphs, your own CUDA
  streams (joined before `forward` returns), build variables such as `TORCH_CUDA_ARCH_LIST` and
  files written in your own folder are fine (a solution with its own streams is timed from an idle
  device).
- Run `python check.py` in this folder to compare your solution with the reference.
"""


def render_report(report: ImportReport, source: Path) -> str:
    lines = [
        f"# KernelBench level {report.level} import",
        "",
        f"From `{source}` by `python -m runners import-kernelbench`.",
        "",
        "```",
        report.summary(),
        "```",
        "",
        "| problem | file | CPU smoke shape | held-out shapes |",
        "|---|---|---|---|",
    ]
    for c in report.imported:
        held = str(len(c.hidden)) if c.hidden else f"none: {c.no_hidden}"
        smoke = "yes" if c.smoke else "no"
        smoke += f" ({_cell(c.smoke_note)})" if c.smoke_note else ""
        lines.append(f"| {c.slug} | {c.source} | {smoke} | {held} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
