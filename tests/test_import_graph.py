"""The project's imports: no circle anywhere, and no module reaching into another's private names.

The graph is grimp's (import-linter's own): every import counts, at module level, inside functions
and under TYPE_CHECKING alike, as `lint-imports` counts them. A circle is a strongly connected
component of more than one module; each is listed with the imports that close it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("aptix", "modes", "files", "tools", "usage", "agents", "identity", "connections")


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative),
    each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    nodes = sorted(set(edges) | {t for targets in edges.values() for t in targets})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def project_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)  # read afresh: a stale cache would hide a circle
    return {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}


def describe(component: list[str], edges: Mapping[str, Iterable[str]]) -> str:
    members = set(component)
    closing = sorted(f"{a} -> {b}" for a in component for b in edges.get(a, ()) if b in members)
    return f"{', '.join(component)}\n    " + "\n    ".join(closing)


def test_the_cycle_finder_finds_circles_and_only_circles():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"f"}, "g": {"h"}, "h": {"g"}}
    assert cycles(edges) == [["a", "b", "c"], ["g", "h"]]
    assert cycles({"a": {"b"}, "b": {"c"}}) == []


def test_no_import_circle_anywhere():
    edges = project_graph()
    found = cycles(edges)
    assert not found, "Import circles (each a set of modules that import one another):\n" + "\n".join(
        describe(component, edges) for component in found
    )


# --- private names ---------------------------------------------------------------------------------


def private_imports(path: Path, module: str) -> list[str]:
    """`from x import _name` in the module at `path` (named `module`), where x is another module of
    the project: one underscore (a dunder such as __version__ is public). Relative imports are
    resolved. A third party's private name (pygments' `_TokenType`, the type its stubs use too) is
    that library's choice, not ours."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        source = node.module or ""
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            source = ".".join([*base, *([source] if source else [])])
        for alias in node.names:
            private = alias.name.startswith("_") and not alias.name.startswith("__")
            if private and source != module and source.split(".")[0] in PACKAGES:
                found.append(f"{module}: from {source} import {alias.name} (line {node.lineno})")
    return found


def project_modules() -> list[tuple[Path, str]]:
    modules = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts:
                continue
            modules.append((path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)))
    return modules


def test_the_private_name_check_sees_relative_and_absolute_imports(tmp_path):
    source = tmp_path / "views.py"
    source.write_text(
        "from .actions import _session, public\n"
        "from ..other import __version__\n"
        "from pygments.token import _TokenType\n"
    )
    assert private_imports(source, "agents.web.views.views") == [
        "agents.web.views.views: from agents.web.views.actions import _session (line 1)",
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_another_modules_private_name(package):
    modules = [(path, module) for path, module in project_modules() if module.split(".")[0] == package]
    found = [line for path, module in modules for line in private_imports(path, module)]
    assert not found, "Private names imported from other modules (make them public):\n" + "\n".join(found)
