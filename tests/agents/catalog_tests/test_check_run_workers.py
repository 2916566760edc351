"""A check run on the worker path (REDIS_URL: each run goes through the run queue to a real
`aptix_worker` process): a check whose tool needs approval pauses in the worker, is approved once
here, its resumed run goes back through the queue, and the result is the one the script implies."""

from __future__ import annotations

import asyncio

import pytest

from agents.catalog_tests import CheckCase, checks_run
from agents.models import AgentSession, ToolApproval, Turn
from modes.models import AgentMode
from tests.helpers import async_db

pytestmark = [pytest.mark.slow, async_db]


async def test_on_workers_an_approval_is_approved_once_and_the_check_passes(worker, team_a, alice):
    await AgentMode.objects.filter(key="ddr-authoring").aupdate(approval_policy=["document_write: ask"])
    worker.clear()
    worker.reply("", tool_calls=[("document_write", {"title": "DDR: Caching", "content": "## Purpose"})])
    worker.reply("DDR: Caching is drafted.")
    worker.reply("Hello from the worker.")
    cases = [
        CheckCase("ddr-authoring", "Draft a DDR", "agent", {"tool": "document_write", "contains": "drafted"}),
        CheckCase("general", "Hello", "ask", {"contains": "worker", "not_contains": "drafted"}),
    ]
    result = await asyncio.wait_for(checks_run(user=alice, team=team_a, cases=cases, limit=1), 60)
    assert [(c.ok, c.failed, c.status, c.approved) for c in result.checks] == [
        (True, [], "completed", ["document_write"]),
        (True, [], "completed", []),
    ]
    turn = await Turn.objects.select_related("session").aget(session__catalog_test=True, session__mode="ddr-authoring")
    approval = await ToolApproval.objects.aget(turn=turn)
    assert (approval.decision, approval.scope) == (ToolApproval.Decision.APPROVED, ToolApproval.Scope.ONCE)
    assert turn.session.approval_grants == [] and turn.session.deleted_at is not None
    assert not await AgentSession.objects.filter(catalog_test=True, deleted_at__isnull=True).aexists()
