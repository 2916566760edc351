"""Installs from before a mode had routing tests and checks: the seed modes get theirs where they have
none (a curator's own are kept), every version recorded before gains the fields (empty: it had none),
and a seed mode's published version holds what its row does; backwards empties only the seeded ones."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps

from modes.models import AgentMode, ModeVersion
from modes.seed import SEED_TESTS_AND_CHECKS
from modes.versioning import snapshot_of

pytestmark = pytest.mark.django_db

seeding = importlib.import_module("modes.migrations.0018_seed_tests_and_checks")
OWN = [{"prompt": "Our own", "execution": "ask", "expect": {"contains": "own"}}]


def test_the_frozen_seed_is_the_seed_modules():
    assert seeding.SEEDED == SEED_TESTS_AND_CHECKS


def test_forwards_fills_the_seed_modes_and_versions_keeping_a_curators_own():
    AgentMode.objects.update(test_utterances=[], checks=[])
    AgentMode.objects.filter(key="workflow-authoring").update(checks=OWN)
    for version in ModeVersion.objects.all():
        version.snapshot = {k: v for k, v in version.snapshot.items() if k not in ("test_utterances", "checks")}
        version.save(update_fields=["snapshot"])
    AgentMode.objects.create(key="triage", display_name="Triage", description="Tickets")  # no version at all

    seeding.forwards(django_apps, None)
    for mode in AgentMode.objects.filter(key__in=["general", "ddr-authoring", "data-analysis"]):
        assert mode.test_utterances == SEED_TESTS_AND_CHECKS[mode.key]["test_utterances"]
        assert mode.checks == SEED_TESTS_AND_CHECKS[mode.key]["checks"]
        assert mode.versions.get(state="published").snapshot == snapshot_of(mode)
    workflow = AgentMode.objects.get(key="workflow-authoring")
    assert (workflow.test_utterances, workflow.checks) == ([], OWN)
    assert workflow.versions.get(state="published").snapshot["checks"] == []  # as it was published
    assert all({"test_utterances", "checks"} <= set(v.snapshot) for v in ModeVersion.objects.all())

    seeding.backwards(django_apps, None)
    general = AgentMode.objects.get(key="general")
    assert (general.test_utterances, general.checks) == ([], [])
    assert AgentMode.objects.get(key="workflow-authoring").checks == OWN
