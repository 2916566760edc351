"""Lean prompts: the seeded mode prompts leave the mode-switch rule to agent_change_mode's usage
guidance, and migration 0007 brings existing installs the new texts without touching a curator's edit."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps

from agents.run.pipeline import BASE_PROMPT, build_system_prompt, select_tools
from modes.models import AgentMode
from modes.seed import SEED_MODES
from tools.registry import ToolRegistry

pytestmark = pytest.mark.django_db

lean = importlib.import_module("modes.migrations.0007_lean_prompts")
documents = importlib.import_module("modes.migrations.0012_document_tools")
# What a new install seeds: the lean texts, and the document tools' sentence in the two authoring modes.
SEEDED = {key: text + documents.ADDED.get(key, "") for key, text in lean.NEW_PROMPTS.items()}


def prompts() -> dict[str, str]:
    return dict(AgentMode.objects.values_list("key", "system_prompt"))


def test_the_migration_writes_the_seed_texts_of_new_installs():
    assert {mode["key"]: mode["system_prompt"] for mode in SEED_MODES} == SEEDED
    assert set(lean.OLD_PROMPTS) == set(lean.NEW_PROMPTS)
    assert prompts() == SEEDED  # a fresh install: 0002 seeded them, 0007 and 0011 left them


def test_forwards_replaces_only_unedited_prompts_and_backwards_restores_them():
    AgentMode.objects.filter(key="general").update(system_prompt=lean.OLD_PROMPTS["general"])
    AgentMode.objects.filter(key="data-analysis").update(system_prompt=lean.OLD_PROMPTS["data-analysis"])
    AgentMode.objects.filter(key="ddr-authoring").update(system_prompt="A curator's own DDR prompt.")

    lean.forwards(django_apps, None)
    curated = {"ddr-authoring": "A curator's own DDR prompt."}
    assert prompts() == {**SEEDED, **curated}  # unedited prompts replaced, the edit kept

    AgentMode.objects.filter(key="workflow-authoring").update(system_prompt="Edited after the upgrade.")
    lean.backwards(django_apps, None)
    curated["workflow-authoring"] = "Edited after the upgrade."
    assert prompts() == {**lean.OLD_PROMPTS, **curated}


def test_the_mode_prompts_leave_the_switch_rule_to_agent_change_mode():
    for mode in SEED_MODES:
        assert "agent_change_mode" not in mode["system_prompt"]
        assert "(1)" not in mode["system_prompt"]
    assert "(1)" not in BASE_PROMPT


@pytest.mark.parametrize("execution", ["ask", "agent"])
def test_every_seeded_prompt_says_the_switch_rule_once(execution):
    for mode in AgentMode.objects.all():
        selection = select_tools(
            policy=mode.tool_policy, toggles={}, execution=execution, mcp=ToolRegistry("mcp"), server_order=[]
        )
        prompt = build_system_prompt(mode=mode, execution=execution, selection=selection)
        assert prompt.startswith("You are Aptix") and mode.system_prompt in prompt
        assert prompt.count("(1) stay in the current mode") == 1
        assert prompt.count("agent_change_mode: Use this tool to change the current agent session mode") == 1
