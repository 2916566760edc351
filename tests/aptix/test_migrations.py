"""The migrations of our apps form one line per app and match the models. Two migrations share the
number 0009 in agents (0009_turn_trace depends on 0009_turn_resend): renumbering applied migrations
would break existing databases, so they stay. What must hold is that every app ends in exactly one
leaf (two leaves make `migrate` refuse to run until merged) and that no model change lacks a migration."""

from __future__ import annotations

import io
from collections import defaultdict

import pytest
from django.core.management import call_command
from django.db.migrations.loader import MigrationLoader

APPS = ("aptix", "modes", "agents")


def leaves_by_app(loader: MigrationLoader) -> dict[str, list[str]]:
    leaves: dict[str, list[str]] = defaultdict(list)
    for app, name in loader.graph.leaf_nodes():
        leaves[app].append(name)
    return leaves


def test_every_app_has_exactly_one_leaf_migration():
    leaves = leaves_by_app(MigrationLoader(None, ignore_no_migrations=True))
    assert {app: sorted(leaves[app]) for app in APPS if len(leaves[app]) != 1} == {}


def test_two_leaves_of_one_app_are_found():
    """The check above can fail: a migration graph with a second head in an app shows two leaves."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    last = loader.graph.leaf_nodes("agents")[0]
    parent = next(iter(loader.graph.node_map[last].parents)).key
    loader.graph.add_node(("agents", "9999_second_head"), None)
    loader.graph.add_dependency(None, ("agents", "9999_second_head"), parent)
    assert len(leaves_by_app(loader)["agents"]) == 2


@pytest.mark.django_db
def test_makemigrations_finds_no_model_change_without_a_migration():
    out = io.StringIO()
    try:
        call_command("makemigrations", *APPS, check=True, dry_run=True, stdout=out, stderr=out)
    except SystemExit as exit_:  # --check exits 1 when a migration is missing
        pytest.fail(f"makemigrations --check exited {exit_.code}:\n{out.getvalue()}")
    assert "No changes detected" in out.getvalue()
