"""Two processes racing at a team's quota (PostgreSQL + Redis): a turn in an `aptix_worker` process
and one run here, at once, on the same scripted model. Each model call is
charged with an atomic upsert on the month's row before the run's next step reads the sum again
(usage/quotas.py), so no charge is lost and each turn goes at most one step past the quota, then
ends with the final-answer call."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from agents.llm import LLMClient
from agents.models import Turn
from agents.run.reasoner import Reasoner
from agents.runner import get_runner
from agents.sessions import session_create
from agents.turns import turn_start
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.scripted_model import openai_client
from usage.models import UsageMonth

pytestmark = [pytest.mark.slow, async_db]

QUOTA, STEP = 1000, 100  # tokens: every model call of the scripted model costs STEP


async def test_two_processes_racing_at_the_quota_go_at_most_one_step_each_past_it(worker, team_a, alice, bob, settings):
    # Each open turn holds this much of the quota until it ends (agents/turns.py quota_held): both
    # turns start, and race each other's charges (test_quota_reserve.py: what the reserve refuses).
    settings.APTIX_QUOTA_TURN_RESERVE = QUOTA // 4
    here = LLMClient(openai_client(worker.model), model="scripted-model", label="scripted")
    try:
        await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
        team_a.monthly_token_quota = QUOTA
        await team_a.asave()
        for n in range(60):  # far more than the quota allows; different arguments, so never a repeat
            worker.reply(
                f"Step {n}.",
                tool_calls=[("agent_list_modes", {"page": n})],
                prompt_tokens=STEP,
                completion_tokens=0,
                chunk_delay=0.01,
            )
        sessions = [
            await sync_to_async(session_create)(team=team_a, user=user, mode="general", execution="agent")
            for user in (alice, bob)
        ]
        turns = [await sync_to_async(turn_start)(session=s, text="Go on for a while.") for s in sessions]
        in_worker = get_runner().start(turns[0].id)  # on the run queue: the worker process claims it
        await asyncio.wait_for(Reasoner(llm=here).run(turns[1].id), timeout=120)  # this process
        await asyncio.wait_for(get_runner().wait(turns[0].id, in_worker), timeout=120)
    finally:
        await here.client.close()
    ended = [await Turn.objects.aget(pk=t.id) for t in turns]
    assert ended[0].worker and not ended[1].worker  # one ran in the worker process, the other here
    assert [t.status for t in ended] == ["limit_reached", "limit_reached"]
    for turn in ended:
        final = await turn.events.aget(type="limit.reached")
        assert final.payload["limit"] == "quota", final.payload
    used = [t.prompt_tokens + t.completion_tokens for t in ended]
    month = [m async for m in UsageMonth.objects.filter(team=team_a)]
    assert sum(m.prompt_tokens + m.completion_tokens for m in month) == sum(
        used
    )  # every charge counted, none lost between processes
    # Past the quota: per turn at most the step in flight when the sum crossed it, and its final-answer call.
    assert QUOTA <= sum(used) <= QUOTA - STEP + len(ended) * 2 * STEP
    assert worker.model.calls == sum(used) // STEP
