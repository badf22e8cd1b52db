"""A KernelBench-Hard checkout as the import reads it: its folders, its problem files (read, not
run, except the reference) and its grader's tolerance lookup and stress cases (imported).

Their conventions, which our format states differently: shapes.py keys are set on the reference
module by check.py under possibly other names (`reference.BATCH = shape["batch"]`); tolerances
are keyed by the output's dtype; forbidden ops are substrings grepped in the solution's text.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import re
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml

from runners.shape_expr import ExprError, evaluate_expr, expr_names

KNOWN_GPUS = ("h100", "rtxpro6000", "b200")
# Conventional module aliases in their forbidden lists; our gate resolves imports, so an entry
# names the module itself.
ALIASES = {"F": "torch.nn.functional", "nn": "torch.nn", "tl": "triton.language", "np": "numpy"}
_PYTHON_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_FP4 = "the hardware table has no fp4 peak; fp8 is the nearest it has"
# peak_tflops_key -> (our peak_dtype, why where it is not the same name)
PEAK_DTYPES = {
    "fp8": ("fp8", None),
    "bf16": ("bf16", None),
    "fp16": ("fp16", None),
    "tf32": ("tf32", None),
    "fp32": ("fp32", None),
    "int8": ("fp8", "int8 tensor cores run at the fp8 rate on Hopper and Blackwell"),
    "fp6": ("fp8", "the hardware table has no fp6 peak; fp8 is the nearest it has"),
    "fp4": ("fp8", _FP4),
    "nvfp4": ("fp8", _FP4),
    "mxfp4": ("fp8", _FP4),
    "int4": ("fp8", "the hardware table has no int4 peak; fp8 is the nearest it has"),
}


class CheckoutError(ValueError):
    """The checkout is not a KernelBench-Hard checkout with that GPU's problems."""


class Unconvertible(ValueError):
    """A peer problem that cannot become a problem folder; the message is the reason."""


def problems_folder(checkout: Path, gpu: str) -> Path:
    """`benchmarks/hard/problems-<gpu>` of a kernelbench.com checkout (or `problems-<gpu>` of a
    KernelBench-Hard one, whose root is that `hard/` folder)."""
    if not checkout.is_dir():
        raise CheckoutError(f"{checkout}: not a folder")
    nested = checkout / "benchmarks" / "hard"
    hard = nested if nested.is_dir() else checkout
    folder = hard / f"problems-{gpu}"
    if folder.is_dir():
        return folder
    present = sorted(p.name for p in hard.glob("problems-*") if p.is_dir())
    raise CheckoutError(
        f"{hard}: no problems-{gpu} folder; "
        + (f"this checkout has {', '.join(present)}" if present else "it has no problems-* folder")
    )


@dataclass
class PeerEval:
    """Their grader's tolerance lookup and numeric stress cases, imported from the checkout."""

    correctness: types.ModuleType
    stress: types.ModuleType | None
    property_text: str  # property_stress.py, searched for problem names (it needs Hypothesis)

    def tolerance(self, dtype: torch.dtype, override: dict | None) -> dict[str, float]:
        found = self.correctness.tolerance_for_dtype(dtype, override)
        return {"atol": float(found["atol"]), "rtol": float(found["rtol"])}

    def stress_cases(self, name: str) -> list[Any]:
        """Their NumericStressCase objects for a problem, the nominal one left out."""
        if self.stress is None:
            return []
        with _environment_without("KBH_NUMERIC_STRESS"):  # their switch that turns cases off
            cases = self.stress.numeric_stress_cases(name)
        return [case for case in cases if case != self.stress.NOMINAL_CASE]

    def case_override(self, override: dict | None, case: Any) -> dict | None:
        return self.stress.tolerance_for_case(override, case)


def load_peer_eval(hard: Path) -> PeerEval:
    evaluation = hard / "src" / "eval"
    if not (evaluation / "correctness.py").is_file():
        raise CheckoutError(f"{hard}: no src/eval/correctness.py (their tolerances per dtype)")
    stress = evaluation / "numeric_stress.py"
    properties = evaluation / "property_stress.py"
    return PeerEval(
        correctness=_import_file(evaluation / "correctness.py"),
        stress=_import_file(stress) if stress.is_file() else None,
        property_text=properties.read_text(encoding="utf-8") if properties.is_file() else "",
    )


def _import_file(path: Path) -> types.ModuleType:
    """A plain module of the checkout, imported by path under a private name (their `src`
    package is not put on sys.path)."""
    name = f"_kernelbench_hard_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # their file failing is the checkout's problem, said as such
        raise CheckoutError(f"{path}: cannot import: {type(exc).__name__}: {exc}") from None
    finally:
        del sys.modules[name]
    return module


@contextlib.contextmanager
def _environment_without(name: str) -> Iterator[None]:
    saved = os.environ.pop(name, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[name] = saved


# -- their problem files -----------------------------------------------------------------------
def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise Unconvertible(f"cannot read {path.name}: {exc}") from None


def read_spec(path: Path) -> dict[str, Any]:
    try:
        spec = yaml.safe_load(read_text(path))
    except yaml.YAMLError as exc:
        raise Unconvertible(f"problem.yaml: {exc}") from None
    if not isinstance(spec, dict):
        raise Unconvertible("problem.yaml: not a mapping")
    return spec


def tolerance_override(spec: dict[str, Any]) -> dict | None:
    override = spec.get("tolerance")
    return override if isinstance(override, dict) and override else None


def read_shapes(path: Path) -> list[dict[str, int]]:
    """shapes.py's SHAPES, read as a literal (the file is not run)."""
    try:
        tree = ast.parse(read_text(path))
    except SyntaxError as exc:
        raise Unconvertible(f"shapes.py: syntax error at line {exc.lineno}") from None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(_is_name(t, "SHAPES") for t in node.targets):
            with contextlib.suppress(ValueError):
                shapes = ast.literal_eval(node.value)
                if _is_shape_list(shapes):
                    return shapes
    raise Unconvertible("shapes.py: no SHAPES list of dicts of positive integers")


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_shape_list(shapes: Any) -> bool:
    if not isinstance(shapes, list) or not shapes or not isinstance(shapes[0], dict):
        return False
    keys = set(shapes[0])
    return all(
        isinstance(s, dict)
        and set(s) == keys
        and all(isinstance(k, str) and type(v) is int and v > 0 for k, v in s.items())
        for s in shapes
    )


def shim_names(check: Path, shape: dict[str, int], reference: str) -> dict[str, str]:
    """shapes.py key -> the reference module global check.py sets from it
    (`reference.BATCH = shape["batch"]`); a key check.py does not set keeps its name, which must
    then be a module global of reference.py."""
    names = {key: key for key in shape}
    if check.is_file():
        try:
            tree = ast.parse(read_text(check))
        except SyntaxError as exc:
            raise Unconvertible(f"check.py: syntax error at line {exc.lineno}") from None
        for node in ast.walk(tree):
            pair = _shim_assignment(node)
            if pair and pair[0] in names:
                names[pair[0]] = pair[1]
    missing = sorted(set(names.values()) - module_globals(reference))
    if missing:
        raise Unconvertible(
            f"shape parameter(s) {', '.join(missing)} are no module globals of reference.py"
        )
    return names


def _shim_assignment(node: ast.AST) -> tuple[str, str] | None:
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return None
    target, value = node.targets[0], node.value
    if not (isinstance(target, ast.Attribute) and _is_name(target.value, "reference")):
        return None
    key = value.slice if isinstance(value, ast.Subscript) else None
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value, target.attr
    return None


def module_globals(reference: str) -> set[str]:
    try:
        tree = ast.parse(reference)
    except SyntaxError as exc:
        raise Unconvertible(f"reference.py: syntax error at line {exc.lineno}") from None
    return {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }


def renamed(shape: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A shape in shapes.py's spelling under our parameter names."""
    if set(shape) != set(names):
        raise Unconvertible(
            f"a shape has parameters {sorted(shape)}; shapes.py has {sorted(names)}"
        )
    return {names[key]: value for key, value in shape.items()}


def renamed_expr(raw: Any, names: dict[str, str], shapes: list[dict[str, int]]) -> str:
    """A formula of theirs over our parameter names, checked on every shape by our evaluator."""
    if not isinstance(raw, str) or not raw.strip():
        raise Unconvertible("absent")
    try:
        tree = ast.parse(raw.strip(), mode="eval")
    except SyntaxError as exc:
        raise Unconvertible(f"{raw!r} cannot be parsed: {exc.msg}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]
    text = ast.unparse(tree)
    unknown = sorted(expr_names(text) - set(names.values()))
    if unknown:
        raise Unconvertible(f"{raw!r} uses {', '.join(unknown)}, which no shape sets")
    try:
        for shape in shapes:
            evaluate_expr(text, shape)
    except ExprError as exc:
        raise Unconvertible(f"{raw!r}: {exc}") from None
    return text


def peak_dtype(key: Any, notes: list[str]) -> str:
    found, why = PEAK_DTYPES.get(str(key), ("fp32", "an unknown key; fp32 assumed"))
    if why:
        notes.append(f"peak_tflops_key {key}: mapped to {found} ({why})")
    return found


def carried_forbidden(entries: list[Any], notes: list[str]) -> list[str]:
    """Their forbidden substrings as dotted names for our gate, which resolves imports and
    attributes: `import x` / `from x` become the module x, alias spellings (`F.linear`) the full
    name; anything else is reported."""
    carried: list[str] = []
    bare: list[str] = []
    for entry in entries:
        text = str(entry).strip()
        name = _python_name(text)
        if name is None:
            notes.append(f"forbidden {text!r}: not a Python name, not carried")
            continue
        if name != text:
            notes.append(f"forbidden {text!r}: carried as {name}")
        elif "." not in name:
            bare.append(name)
        if name not in carried:
            carried.append(name)
    if bare:
        notes.append(
            f"forbidden {', '.join(bare)}: carried, but our gate matches a bare name only as a "
            "module or global of that name (their grep matched the text anywhere; imported "
            "from its package, it is caught under the package's entry)"
        )
    return carried


def _python_name(text: str) -> str | None:
    imported = re.fullmatch(r"(?:from|import)\s+([A-Za-z_][\w.]*)", text)
    head, dot, rest = text.partition(".")
    if imported:
        name = imported[1]
    elif head in ALIASES and rest:
        name = ALIASES[head] + dot + rest
    else:
        name = text
    return name if _PYTHON_NAME.fullmatch(name) else None


def seed_notes(reference: str, notes: list[str]) -> None:
    """Say where the reference fixes its own randomness, so that seeds do not vary it."""
    tree = ast.parse(reference)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)} if model else {}
    if _calls_manual_seed(functions.get("get_inputs")):
        notes.append(
            "get_inputs() re-seeds torch itself: every seed draws the same inputs, which only "
            "the distributions (scaled cases) vary"
        )
    if _calls_manual_seed(methods.get("__init__")):
        notes.append(
            "Model seeds its weights from its arguments: every seed of a shape grades the same "
            "weights"
        )


def _calls_manual_seed(node: ast.AST | None) -> bool:
    return node is not None and any(
        isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "manual_seed"
        for n in ast.walk(node)
    )
