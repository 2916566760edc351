"""The limits the code's layout keeps (docs/architecture.md "Where a change goes"): `agents/` holds at
most 15 modules at its top level (a new area is a subpackage), no module passes 600 lines (a module
that grows past it is split by meaning, never squeezed to fit), and the code says why it is as it is
instead of citing the issue that asked for it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("aptix", "modes", "files", "tools", "agents", "identity", "connections", "interop")
MAX_TOP_LEVEL_MODULES = 15
MAX_LINES = 600
ISSUE_CITATION = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)


def source_files(*suffixes: str) -> list[Path]:
    roots = [ROOT / app for app in APPS] + [ROOT / "bench", ROOT / "static", ROOT / "templates"]
    return sorted(
        path
        for root in roots
        for path in root.rglob("*")
        if path.suffix in suffixes and "vendor" not in path.parts and "__pycache__" not in path.parts
    )


def too_long(paths: list[Path]) -> list[str]:
    counts = {path: len(path.read_text().splitlines()) for path in paths}
    return [f"{path}: {n} lines" for path, n in counts.items() if n > MAX_LINES]


def test_agents_keeps_few_top_level_modules():
    modules = sorted(p.name for p in (ROOT / "agents").glob("*.py"))
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, f"put a new area in a subpackage of agents/: {modules}"


def test_no_module_passes_the_line_limit():
    modules = [p for p in source_files(".py") if "migrations" not in p.parts]
    assert len(modules) > 100  # the walk found the code
    assert too_long(modules) == []


def test_the_line_check_can_fail(tmp_path):
    long = tmp_path / "long.py"
    long.write_text("x = 1\n" * (MAX_LINES + 1))
    assert too_long([long]) == [f"{long}: {MAX_LINES + 1} lines"]


def test_code_cites_no_issue_numbers():
    citing = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in source_files(".py", ".html", ".js", ".css")
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if ISSUE_CITATION.search(line)
    ]
    assert citing == [], "say what the code does and why, not which issue asked for it:\n" + "\n".join(citing)
