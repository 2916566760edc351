"""Monthly quotas (usage/quotas.py): past the quota a turn is refused before anything is written (the
API answers 429 naming the field "quota"); a turn that crosses it mid-run ends at its next step with
the final-answer call and says why; a member's own quota replaces the team's for their turns."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError

from agents.models import AgentSession, Turn, TurnEvent
from agents.sessions import session_create
from agents.turns import turn_start
from aptix.models import Membership
from aptix.tokens import api_token_create
from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db
from usage.quotas import quota_state
from usage.services import Charge, usage_charge


def spend(team, user, tokens: int) -> None:
    usage_charge(Charge(team.pk, user.pk, "m", "general", tokens, 0, None, True))


def test_past_the_teams_quota_a_turn_is_refused_and_nothing_is_written(team_a, alice):
    session = session_create(team=team_a, user=alice, mode="general")
    team_a.monthly_token_quota = 1000
    team_a.save()
    spend(team_a, alice, 1000)
    with pytest.raises(ValidationError) as refused:
        turn_start(session=session, text="Hi")
    message = refused.value.message_dict["quota"][0]
    first_of_next = quota_state(team_id=team_a.pk, user_id=alice.pk).resets_on
    assert message.startswith("Team A has used its monthly quota of 1,000 tokens; it resets on ")
    assert first_of_next.day == 1 and first_of_next > date.today()
    assert not Turn.objects.exists() and not TurnEvent.objects.exists()


def test_a_members_own_quota_replaces_the_teams(team_a, alice, bob):
    team_a.monthly_token_quota = 1000
    team_a.save()
    Membership.objects.filter(team=team_a, user=alice).update(monthly_token_quota=5000)
    spend(team_a, bob, 1200)
    assert quota_state(team_id=team_a.pk, user_id=bob.pk).exceeded  # the team's: 1,200 of 1,000
    mine = quota_state(team_id=team_a.pk, user_id=alice.pk)
    assert not mine.exceeded and mine.own and mine.used == 0  # her own: nothing used yet
    spend(team_a, alice, 4500)
    mine = quota_state(team_id=team_a.pk, user_id=alice.pk)
    assert mine.near and not mine.exceeded and "90% of your monthly quota" in mine.message


def test_a_cost_quota_is_checked_like_the_token_quota(team_a, alice):
    team_a.monthly_cost_quota = 10
    team_a.save()
    usage_charge(Charge(team_a.pk, alice.pk, "m", "general", 1, 0, Decimal(10), True))
    state = quota_state(team_id=team_a.pk, user_id=alice.pk)
    assert state.exceeded and state.unit == "cost" and "monthly quota of 10.00 in cost" in state.message


@async_db
async def test_the_api_answers_429_naming_the_quota(team_a, alice):
    team_a.monthly_token_quota = 10
    await team_a.asave()
    await sync_to_async(spend)(team_a, alice, 10)
    _, secret = await sync_to_async(api_token_create)(user=alice, name="t")
    client = ServerLikeAsyncClient()
    response = await client.post(
        "/api/v1/agent/execute",
        data=json.dumps({"message": "Hi"}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 429
    error = response.json()["error"]
    assert error["field"] == "quota" and error["message"].startswith("Team A has used its monthly quota of 10 tokens")
    assert not await AgentSession.objects.aexists()  # the new conversation was not made either


@async_db
async def test_a_turn_crossing_the_quota_ends_at_its_next_step_with_an_answer(
    team_a, make_session, run_turn, model, lookup_tool
):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    team_a.monthly_token_quota = 1000
    await team_a.asave()
    session = await make_session(execution="agent")
    model.reply("", tool_calls=[("kb__lookup", {"q": "a"})], prompt_tokens=800, completion_tokens=100)
    model.reply("", tool_calls=[("kb__lookup", {"q": "b"})], prompt_tokens=900, completion_tokens=100)  # crosses
    model.reply("What I found: a and b.", prompt_tokens=50, completion_tokens=10)  # the final-answer call
    turn = await run_turn(session, "Find a, then b, then c.")
    assert turn.status == "limit_reached" and turn.answer == "What I found: a and b."
    assert model.calls == 3 and "tools" not in model.last_request  # the last call offers no tools
    assert "Team A has used its monthly quota of 1,000 tokens" in model.last_messages[-1]["content"]
    final = await TurnEvent.objects.aget(turn=turn, type="limit.reached")
    assert final.payload["limit"] == "quota" and final.payload["message"].startswith("Stopped: Team A has used")


@async_db
async def test_the_composer_says_the_quota_is_used_and_the_page_warns_from_80_percent(team_a, alice):
    team_a.monthly_token_quota = 1000
    await team_a.asave()
    session = await sync_to_async(session_create)(team=team_a, user=alice, mode="general")
    client = ServerLikeAsyncClient()
    await client.aforce_login(alice)
    page = (await client.get(f"/sessions/{session.id}/")).content.decode()
    assert '<p class="quota-notice" id="quota-notice" hidden></p>' in page  # under 80%: nothing said
    await sync_to_async(spend)(team_a, alice, 800)
    page = (await client.get(f"/sessions/{session.id}/")).content.decode()
    assert "80% of Team A&#x27;s monthly quota of 1,000 tokens is used; it resets on" in page
    await sync_to_async(spend)(team_a, alice, 200)
    response = await client.post(f"/sessions/{session.id}/turns/", {"message": "Hi"})
    assert response.status_code == 422
    refused = response.content.decode()
    assert refused.count("Team A has used its monthly quota of 1,000 tokens; it resets on") == 1  # said once
    assert '<p class="quota-notice" id="quota-notice" hidden hx-swap-oob="true"></p>' in refused  # the notice goes
    assert not await Turn.objects.aexists()


@async_db
async def test_a_turn_resumed_past_the_quota_takes_no_step_before_its_final_answer(
    team_a, alice, make_session, model, llm
):
    from agents.run.reasoner import Reasoner

    await AgentMode.objects.filter(key="general").aupdate(tool_policy=[])
    team_a.monthly_token_quota = 1000
    await team_a.asave()
    session = await make_session(execution="agent")
    client_tool = {
        "type": "function",
        "function": {
            "name": "open_file",
            "description": "Open a file.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    model.reply("", tool_calls=[("open_file", {})], prompt_tokens=100, completion_tokens=10)
    turn = await sync_to_async(turn_start)(session=session, text="Open it.")
    turn = await Reasoner(llm=llm).run(turn.id, client_tools=[client_tool])
    assert turn.status == "requires_action"
    await sync_to_async(spend)(team_a, alice, 900)  # another turn used the rest meanwhile
    call_id = turn.state["pending"][0]["id"]
    model.reply("From what I have: the file is open.", prompt_tokens=10, completion_tokens=5)
    turn = await Reasoner(llm=llm).run(turn.id, tool_results=[{"toolCallId": call_id, "content": "opened"}])
    assert turn.status == "limit_reached" and turn.answer == "From what I have: the file is open."
    assert model.calls == 2 and "tools" not in model.last_request  # straight to the final-answer call
