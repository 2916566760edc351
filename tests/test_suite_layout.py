"""The test suite's own layout rules: a test module never imports another test module (shared helpers
live in tests/helpers/ or in conftest fixtures, so moving or deleting one test file breaks no other),
and tests say what they test and why rather than citing the issue that asked for it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
ISSUE_CITATION = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported_modules(source: str, module: str) -> set[str]:
    """Every module that `source` (the text of `module`) imports, at any depth, relative imports
    resolved; `from package import name` counts `package.name` too (it may be a module)."""
    package = module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            imported = ".".join([*base, *([node.module] if node.module else [])])
            found.add(imported)
            found.update(f"{imported}.{alias.name}" for alias in node.names)
    return found


def is_test_module(name: str) -> bool:
    return name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")


def modules_importing_test_modules(paths: list[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} imports {imported}"
        for path in paths
        for imported in sorted(imported_modules(path.read_text(), module_name(path)))
        if is_test_module(imported) and imported != module_name(path)
    ]


def test_no_test_module_imports_another_test_module():
    offenders = modules_importing_test_modules(sorted(TESTS.rglob("*.py")))
    assert offenders == [], "move what they share into tests/helpers/ or a conftest fixture:\n" + "\n".join(offenders)


def test_the_import_scan_finds_relative_absolute_and_nested_imports_of_test_modules():
    """The check above can fail: every spelling of such an import is found, and helpers are not."""
    source = (
        "from .test_stream import connect\n"
        "from tests.tools import test_registry\n"
        "def f():\n    import tests.aptix.test_fuzz\n"
        "from tests.helpers import async_db\n"
        "from ..helpers.streams import connect\n"
    )
    found = {m for m in imported_modules(source, "tests.agents.web.test_sample") if is_test_module(m)}
    assert found == {"tests.agents.web.test_stream", "tests.tools.test_registry", "tests.aptix.test_fuzz"}


def test_tests_do_not_cite_issue_numbers():
    """A test's name, docstring and comments say what is tested and why; an issue number says neither."""
    citing = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if ISSUE_CITATION.search(line)
    ]
    assert citing == [], "\n".join(citing)
