"""The import graph: no cycle between modules, and the arrows of docs/architecture.md."""

import subprocess
import sys
from pathlib import Path

import grimp

PACKAGES = ("arena_web", "submissions", "runners", "transcripts", "arena_cli")
ROOT = Path(__file__).resolve().parent.parent


def import_cycles(graph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph.modules):
        if start not in index:
            _visit(graph, start, index, low, stack, on_stack, groups)
    return [sorted(group) for group in groups if len(group) > 1]


def _visit(graph, start, index, low, stack, on_stack, groups) -> None:
    work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
    index[start] = low[start] = len(index)
    stack.append(start)
    on_stack.add(start)
    while work:
        module, children = work[-1]
        child = next((c for c in children if c in graph.modules), None)
        if child is None:
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                groups.append(_pop_group(module, stack, on_stack))
        elif child not in index:
            index[child] = low[child] = len(index)
            stack.append(child)
            on_stack.add(child)
            work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
        elif child in on_stack:
            low[module] = min(low[module], index[child])


def _pop_group(root: str, stack: list[str], on_stack: set[str]) -> list[str]:
    group = []
    while True:
        module = stack.pop()
        on_stack.discard(module)
        group.append(module)
        if module == root:
            return group


def test_no_module_imports_itself_through_others():
    graph = grimp.build_graph(*PACKAGES)  # imports inside functions count too
    assert import_cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = grimp.ImportGraph()
    for importer, imported in (("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")):
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [["a", "b", "c"]]


def test_the_import_contracts_hold():
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
