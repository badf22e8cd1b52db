"""A safe evaluator for the flops/bytes expressions of problem.yaml: arithmetic over shape names,
walked through a whitelisted AST, never eval."""

from __future__ import annotations

import ast
from collections.abc import Mapping

_MAX_EXPONENT = 64


class ExprError(ValueError):
    """A flops/bytes expression uses something outside the whitelist or cannot be evaluated."""


def evaluate_expr(expr: str, names: Mapping[str, float]) -> float:
    """Evaluate arithmetic over shape names by walking a whitelisted AST (never eval)."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {expr!r}: {exc.msg}") from None
    try:
        return float(_eval_node(tree.body, names))
    except (ZeroDivisionError, OverflowError) as exc:
        raise ExprError(f"cannot evaluate {expr!r}: {exc}") from None


def expr_names(expr: str) -> set[str]:
    tree = ast.parse(expr, mode="eval")
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in calls}


_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_FUNCTIONS = {"min": min, "max": max}


def _eval_node(node: ast.AST, names: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise ExprError(f"unknown name {node.id!r}")
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval_node(node.operand, names)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval_node(node.left, names), _eval_node(node.right, names)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ExprError(f"exponent {right} is too large")
        return _BINARY[type(node.op)](left, right)
    if _is_min_max_call(node):
        return _FUNCTIONS[node.func.id](*(_eval_node(arg, names) for arg in node.args))
    raise ExprError(f"{type(node).__name__} is not allowed in a shape expression")


def _is_min_max_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and len(node.args) >= 2
        and not node.keywords
        and not any(isinstance(arg, ast.Starred) for arg in node.args)
    )
