"""Installs seeded before the document tools get them in DDR Authoring and Workflow Authoring: the
policy gains document_write and document_read, the prompt its sentence where a curator did not edit
it; backwards undoes exactly that."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps

from modes.models import AgentMode

pytestmark = pytest.mark.django_db

lean = importlib.import_module("modes.migrations.0007_lean_prompts")
documents = importlib.import_module("modes.migrations.0012_document_tools")


def test_forwards_offers_the_tools_and_says_when_to_use_them_keeping_a_curators_edit():
    AgentMode.objects.filter(key="ddr-authoring").update(
        tool_policy=["agent_list_modes", "time.get_current_time"], system_prompt=lean.NEW_PROMPTS["ddr-authoring"]
    )
    AgentMode.objects.filter(key="workflow-authoring").update(tool_policy=["*"], system_prompt="Curated.")
    documents.forwards(django_apps, None)
    ddr = AgentMode.objects.get(key="ddr-authoring")
    assert ddr.tool_policy == ["agent_list_modes", "time.get_current_time", "document_write", "document_read"]
    assert ddr.system_prompt.endswith(documents.ADDED["ddr-authoring"]) and "document_write" in ddr.system_prompt
    workflow = AgentMode.objects.get(key="workflow-authoring")
    assert (workflow.tool_policy, workflow.system_prompt) == (["*"], "Curated.")

    documents.forwards(django_apps, None)  # twice is once
    assert AgentMode.objects.get(key="ddr-authoring").tool_policy == ddr.tool_policy

    documents.backwards(django_apps, None)
    ddr = AgentMode.objects.get(key="ddr-authoring")
    assert ddr.tool_policy == ["agent_list_modes", "time.get_current_time"]
    assert ddr.system_prompt == lean.NEW_PROMPTS["ddr-authoring"]
