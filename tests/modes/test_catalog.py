"""The catalog: seed content, the single-default invariant and get_all_modes()."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from modes.catalog import AgentModeSummary, catalog_service
from modes.models import AgentMode
from modes.services import mode_delete, mode_make_default, mode_save
from tests.helpers import inline_db

pytestmark = pytest.mark.django_db

SEEDED = ["general", "ddr-authoring", "workflow-authoring", "data-analysis"]


def defaults() -> list[str]:
    return list(AgentMode.objects.filter(is_default=True).values_list("key", flat=True))


def test_seed_has_the_four_modes_with_real_content():
    modes = {m.key: m for m in AgentMode.objects.all()}
    assert list(AgentMode.objects.values_list("key", flat=True)) == SEEDED
    assert defaults() == ["general"]
    for mode in modes.values():
        assert re.fullmatch(r"[0-9a-f]{32}", mode.id)
        assert mode.is_active
        assert len(mode.description) > 40 and len(mode.system_prompt) > 200
        assert mode.system_prompt_summary and mode.human_role_hints
        assert len(mode.example_utterances) >= 4 and mode.tool_policy
        assert "agent_change_mode" not in mode.tool_policy
        mode.full_clean()  # the seed satisfies the same validation as the admin
    assert "sql.*" in modes["data-analysis"].tool_policy


def test_making_a_mode_default_unsets_the_previous_one():
    mode_make_default(mode=AgentMode.objects.get(key="data-analysis"))
    assert defaults() == ["data-analysis"]
    mode = AgentMode.objects.get(key="ddr-authoring")
    mode.is_default = True
    mode_save(mode=mode)
    assert defaults() == ["ddr-authoring"]


def test_the_database_refuses_two_defaults():
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentMode.objects.filter(key="data-analysis").update(is_default=True)


def test_the_default_cannot_be_unset_deactivated_or_deleted():
    general = AgentMode.objects.get(key="general")
    general.is_default = False
    with pytest.raises(ValidationError, match="always be a default"):
        mode_save(mode=general)
    general = AgentMode.objects.get(key="general")
    general.is_active = False
    with pytest.raises(ValidationError, match="cannot be deactivated"):
        mode_save(mode=general)
    with pytest.raises(ValidationError, match="cannot be deleted"):
        mode_delete(mode=AgentMode.objects.get(key="general"))
    assert defaults() == ["general"] and AgentMode.objects.get(key="general").is_active


def test_an_inactive_mode_cannot_become_default():
    AgentMode.objects.filter(key="data-analysis").update(is_active=False)
    with pytest.raises(ValidationError):
        mode_make_default(mode=AgentMode.objects.get(key="data-analysis"))
    assert defaults() == ["general"]


def test_first_mode_of_an_empty_catalog_becomes_default():
    AgentMode.objects.all().delete()
    mode = mode_save(mode=AgentMode(key="solo", display_name="Solo", description="Only one."))
    assert mode.is_default and defaults() == ["solo"]


def test_non_default_mode_can_be_deleted():
    mode_delete(mode=AgentMode.objects.get(key="workflow-authoring"))
    assert not AgentMode.objects.filter(key="workflow-authoring").exists()


@pytest.mark.parametrize(
    "field, value",
    [
        ("key", "Bad Key"),
        ("key", "-lead"),
        ("tool_policy", ["sql.*", "rm -rf"]),
        ("example_utterances", ["ok", ""]),
        ("human_role_hints", "not a list"),
    ],
)
def test_invalid_fields_are_refused(field, value):
    mode = AgentMode.objects.get(key="data-analysis")
    setattr(mode, field, value)
    with pytest.raises(ValidationError) as excinfo:
        mode_save(mode=mode)
    assert field in excinfo.value.message_dict


@inline_db
async def test_get_all_modes_returns_active_summaries_and_sees_edits_at_once():
    modes = await catalog_service.get_all_modes()
    assert [m.key for m in modes] == SEEDED
    general = modes[0]
    assert isinstance(general, AgentModeSummary)
    assert general.is_default and general.display_name == "General"
    assert general.example_utterances and general.human_role_hints and general.system_prompt_summary

    await AgentMode.objects.filter(key="ddr-authoring").aupdate(is_active=False)
    await AgentMode.objects.filter(key="data-analysis").aupdate(display_name="Data & Charts")
    modes = await catalog_service.get_all_modes()
    assert [m.key for m in modes] == ["general", "workflow-authoring", "data-analysis"]
    assert modes[-1].display_name == "Data & Charts"
