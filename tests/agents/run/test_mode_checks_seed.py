"""The seed catalog's checks pass with the built-in offline model, each run as a real turn in a new
session in its mode and execution; and a mode's test utterances never reach the model: not in the
request it is sent, not in agent_list_modes' answer, not among the badge's suggestions."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.llm import build_llm_client
from agents.models import Turn
from agents.run.reasoner import Reasoner
from agents.turns import turn_start
from modes.models import AgentMode
from modes.seed import SEED_TESTS_AND_CHECKS
from tests.helpers import inline_db

pytestmark = inline_db

SEED_CHECKS = [
    pytest.param(key, index, check, id=f"{key}-{index}")
    for key, cases in SEED_TESTS_AND_CHECKS.items()
    for index, check in enumerate(cases["checks"])
]


async def failures(turn: Turn, expect: dict) -> list[str]:
    """Why a check's turn fails its expectations (none: it passes)."""
    called = [e.payload.get("name") async for e in turn.events.filter(type="tool.called")]
    answer = (turn.answer or "").lower()
    failed = []
    if "tool" in expect and expect["tool"] not in called:
        failed.append(f"tool {expect['tool']} not called (called: {called})")
    if "contains" in expect and expect["contains"].lower() not in answer:
        failed.append(f"answer lacks {expect['contains']!r}: {turn.answer!r}")
    if "not_contains" in expect and expect["not_contains"].lower() in answer:
        failed.append(f"answer has {expect['not_contains']!r}: {turn.answer!r}")
    if turn.status != expect.get("status", "completed"):
        failed.append(f"status {turn.status}")
    return failed


@pytest.mark.parametrize(("key", "index", "check"), SEED_CHECKS)
async def test_every_seed_check_passes_with_the_offline_model(make_session, mcp_sql_tool, key, index, check):
    stored = (await AgentMode.objects.aget(key=key)).checks
    assert stored[index] == check  # the migration gave the catalog exactly these
    session = await make_session(mode=key, execution=check["execution"])
    turn = await sync_to_async(turn_start)(session=session, text=check["prompt"])
    await Reasoner(llm=build_llm_client()).run(turn.id)  # no model configured: the offline model
    turn = await Turn.objects.aget(pk=turn.id)
    assert await failures(turn, check["expect"]) == []


HIDDEN = "Reconcile the zebra ledger for quarter nine"


async def test_test_utterances_never_reach_the_model(make_session, run_turn, model):
    for key in ("general", "data-analysis"):
        mode = await AgentMode.objects.aget(key=key)
        mode.test_utterances = [*mode.test_utterances, HIDDEN]
        mode.checks = [{"prompt": HIDDEN, "execution": "ask", "expect": {"contains": "zebra"}}]
        await mode.asave()
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("agent_list_modes", {"includeExamples": True})])
    model.reply("Here they are.")
    await run_turn(session, "What modes are there?")
    sent = json.dumps(model.requests)
    assert "Summarise this email thread" in sent  # the examples are listed: the test looks where they are
    assert "zebra" not in sent.lower()


async def test_a_check_the_offline_model_does_not_pass_is_reported_with_its_reasons(make_session):
    session = await make_session(mode="general", execution="ask")
    turn = await sync_to_async(turn_start)(session=session, text="Hello there")
    await Reasoner(llm=build_llm_client()).run(turn.id)
    turn = await Turn.objects.aget(pk=turn.id)
    expect = {"tool": "document_write", "contains": "zebra", "not_contains": "offline", "status": "failed"}
    reasons = await failures(turn, expect)
    assert [reason.split(" ")[0] for reason in reasons] == ["tool", "answer", "answer", "status"], reasons
