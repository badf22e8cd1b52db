"""What the import cannot derive from a KernelBench-Hard problem, per problem it knows: smoke
shapes, held-out shapes and a structural input case, read from runners/problems/
kernelbench_hard.yaml (held-out shapes are secret: that folder is masked from candidates)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from runners.kernelbench_hard import cases
from runners.problem import HIDDEN_CASES, problems_root

KNOWN_FILE = problems_root() / "kernelbench_hard.yaml"
# Structural case name -> the function of runners.kernelbench_hard.cases that draws it.
STRUCTURAL = {
    "short_sequences": cases.short_sequences,
    "clustered_ties": cases.clustered_ties,
    "ragged_routing": cases.ragged_routing,
}
_KEYS = {"smoke", "held_out", "structural"}


class KnownError(ValueError):
    """The known-problems file is malformed; the message names the problem and the field."""


@dataclass(frozen=True)
class Known:
    smoke: list[dict[str, int]]
    held_out: list[tuple[str, dict[str, int]]]  # (case, shape in shapes.py's spelling)
    structural: str | None


def load_known(path: Path = KNOWN_FILE) -> dict[str, Known]:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise KnownError(f"{path}: cannot read: {exc}") from None
    if not isinstance(raw, dict):
        raise KnownError(f"{path}: expected a mapping of problem names")
    return {str(name): _known(f"{path.name}: {name}", entry) for name, entry in raw.items()}


def _known(where: str, entry: Any) -> Known:
    if not isinstance(entry, dict) or set(entry) - _KEYS:
        raise KnownError(f"{where}: expected a mapping of {', '.join(sorted(_KEYS))}")
    structural = entry.get("structural")
    if structural is not None and structural not in STRUCTURAL:
        raise KnownError(f"{where}: structural {structural!r}; one of {', '.join(STRUCTURAL)}")
    held_out = []
    for shape in _shapes(f"{where}: held_out", entry.get("held_out", []), case=True):
        held_out.append((shape.pop("case"), shape))
    return Known(
        _shapes(f"{where}: smoke", entry.get("smoke", []), case=False), held_out, structural
    )


def _shapes(where: str, raw: Any, *, case: bool) -> list[dict[str, Any]]:
    if not isinstance(raw, list) or not all(isinstance(s, dict) and s for s in raw):
        raise KnownError(f"{where}: expected a list of shapes")
    for shape in raw:
        if case and shape.get("case") not in HIDDEN_CASES:
            raise KnownError(
                f"{where}: case {shape.get('case')!r}; one of {', '.join(HIDDEN_CASES)}"
            )
        sizes = {k: v for k, v in shape.items() if k != "case" or not case}
        if not all(type(v) is int and v > 0 for v in sizes.values()):
            raise KnownError(f"{where}: {shape} has a size that is not a positive integer")
    return [dict(shape) for shape in raw]
