"""Views parse, call a service or a selector, and render: no view module reads or writes the ORM
itself. Every module under agents/web/views/, the JSON API (agents/web/api*.py), the page fragments
they share, the websocket consumer and the automations' pages (automations/web/*views.py) is parsed
and checked for a model import (agents.models, modes.models: the queries belong in agents/selectors.py
or a service), a manager (`.objects`) or a queryset method.

An import under `if TYPE_CHECKING:` is allowed (an annotation queries nothing), and so are the
TextChoices enums in ALLOWED_MODEL_NAMES (values, not queries)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "agents" / "web"
VIEW_MODULES = sorted(
    [
        *(WEB / "views").glob("*.py"),
        *WEB.glob("api*.py"),
        WEB / "fragments.py",
        WEB / "toolpanel.py",
        WEB / "document_panel.py",
        WEB / "consumers.py",
        *(ROOT / "automations" / "web").glob("*views.py"),  # the automations' pages and the inbox
    ]
)
# The page's and the stream's renderers: they name model classes (a status enum, an unsaved event),
# but read through selectors too.
RENDER_MODULES = sorted(
    [WEB / "live.py", WEB / "renders.py", WEB / "timeline.py", WEB / "event_views.py", WEB / "streams.py"]
)
MODEL_MODULES = frozenset({"agents.models", "modes.models"})
ALLOWED_MODEL_NAMES = frozenset({"Execution"})  # agents.models.Execution: Ask / Agent, a TextChoices enum
# Queryset and model methods whose names nothing else in these modules uses (not `get`, `update`,
# `values` or `count`, which dicts and lists have too).
ORM_METHODS = frozenset(
    {
        "filter",
        "exclude",
        "select_related",
        "prefetch_related",
        "values_list",
        "annotate",
        "aggregate",
        "aaggregate",
        "order_by",
        "only",
        "defer",
        "afirst",
        "alast",
        "aget",
        "aexists",
        "acount",
        "aupdate",
        "adelete",
        "select_for_update",
        "get_or_create",
        "update_or_create",
        "bulk_create",
        "refresh_from_db",
        "arefresh_from_db",
    }
)


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _imported_module(node: ast.ImportFrom, module: str) -> str:
    """The absolute name `from ... import` reads from, relative imports resolved against `module`."""
    if not node.level:
        return node.module or ""
    package = module.split(".")[: -node.level]
    return ".".join([*package, *([node.module] if node.module else [])])


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes inside `if TYPE_CHECKING:` blocks."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return skipped


def orm_uses(source: str, module: str, *, imports: bool = True) -> list[str]:
    """Where `source` (the text of `module`) imports a model module (unless `imports` is False) or
    queries the ORM, one line each."""
    tree = ast.parse(source)
    annotations_only = _type_checking_only(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in annotations_only:
            continue
        if isinstance(node, ast.Import) and imports:
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name in MODEL_MODULES]
        elif isinstance(node, ast.ImportFrom) and imports and _imported_module(node, module) in MODEL_MODULES:
            names = [a.name for a in node.names if a.name not in ALLOWED_MODEL_NAMES]
            if names:
                found.append(f"{node.lineno}: from {_imported_module(node, module)} import {', '.join(names)}")
        elif isinstance(node, ast.Attribute) and node.attr == "objects":
            found.append(f"{node.lineno}: .objects")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ORM_METHODS:
            found.append(f"{node.lineno}: .{node.func.attr}()")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


@pytest.mark.parametrize("path", VIEW_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_view_module_does_not_query_the_orm(path: Path) -> None:
    assert orm_uses(path.read_text(), _module_name(path)) == []


@pytest.mark.parametrize("path", RENDER_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_render_module_does_not_query_the_orm(path: Path) -> None:
    assert orm_uses(path.read_text(), _module_name(path), imports=False) == []


def test_the_checked_modules_are_there() -> None:
    names = {p.name for p in VIEW_MODULES}
    expected = {"sessions.py", "actions.py", "history.py", "api.py", "api_resend.py", "fragments.py", "consumers.py"}
    assert expected <= names


def test_the_check_finds_each_kind_of_orm_use() -> None:
    """The checker itself: each way a view used to reach the ORM is reported, annotations are not."""
    source = """
from typing import TYPE_CHECKING
from agents.models import Execution, Turn
from ...models import AgentSession
import modes.models
if TYPE_CHECKING:
    from agents.models import TurnEvent
def view(request, session):
    Turn.objects.all()
    session.turns.filter(index=1).order_by("index")
    session.refresh_from_db()
    {}.update(a=1)
"""
    assert orm_uses(source, "agents.web.views.example") == [
        "3: from agents.models import Turn",
        "4: from agents.models import AgentSession",
        "5: import modes.models",
        "9: .objects",
        "10: .order_by()",
        "10: .filter()",
        "11: .refresh_from_db()",
    ]
