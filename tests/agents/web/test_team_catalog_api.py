"""Team catalogs in the JSON API: `GET /api/v1/modes` lists what the token's user may use (the team
their conversations start in) and marks the mode a new one starts in; `/api/v1/agent/execute` refuses
another team's mode as an unknown one and starts a conversation in the team's default."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentSession, Turn
from aptix.preferences import preferences_update
from aptix.tokens import api_token_create
from modes.models import AgentMode, TeamDefaultMode
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.catalogs import B_ONLY, team_only_mode

pytestmark = async_db

PREFS = {"default_execution": "ask", "theme": "system", "notify_turns": False}
VALID_FOR_A = "Valid modes: general, ddr-authoring, workflow-authoring, data-analysis."


@pytest.fixture
async def b_only(team_b):
    return await sync_to_async(team_only_mode)(team_b, execution="agent")


@pytest.fixture
async def token(alice):
    return (await sync_to_async(api_token_create)(user=alice, name="ci"))[1]


@pytest.fixture
async def carol_token(carol):
    return (await sync_to_async(api_token_create)(user=carol))[1]


async def get_modes(token=None, method="get"):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = await getattr(ServerLikeAsyncClient(), method)("/api/v1/modes", headers=headers)
    return response.status_code, json.loads(response.content)


async def execute(body, token):
    response = await ServerLikeAsyncClient().post(
        "/api/v1/agent/execute",
        data=json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    return response.status_code, json.loads(response.content)


async def test_modes_needs_a_token():
    for token in [None, "apx_wrong"]:
        status, body = await get_modes(token)
        assert status == 401 and "bearer token" in body["error"]["message"]


async def test_modes_lists_what_the_users_team_may_use(token, carol_token, b_only):
    status, modes = await get_modes(token)
    assert status == 200
    assert [m["key"] for m in modes] == ["general", "ddr-authoring", "workflow-authoring", "data-analysis"]
    general = AgentMode.objects.filter(key="general")
    assert modes[0] == {
        "key": "general",
        "name": "General",
        "description": (await general.afirst()).description,
        "isDefault": True,
        "execution": None,
        "version": 1,
    }
    status, theirs = await get_modes(carol_token)
    assert status == 200 and [m["key"] for m in theirs][-1] == B_ONLY
    assert theirs[-1] == {
        "key": B_ONLY,
        "name": "B Secrets",
        "description": "Team B's confidential playbooks.",
        "isDefault": False,
        "execution": "agent",
        "version": 1,
    }


async def test_modes_marks_the_teams_own_default(token, team_a):
    await TeamDefaultMode.objects.acreate(team=team_a, mode=await AgentMode.objects.aget(key="data-analysis"))
    _, modes = await get_modes(token)
    assert [m["key"] for m in modes if m["isDefault"]] == ["data-analysis"]


async def test_modes_is_get_only(token):
    status, body = await get_modes(token, method="post")
    assert status == 405 and body["error"]["message"] == "Use GET."


async def test_execute_refuses_another_teams_mode_as_an_unknown_mode(llm, model, token, b_only):
    for mode in [B_ONLY, "astrology"]:
        status, body = await execute({"message": "hi", "mode": mode}, token)
        assert status == 400
        assert body["error"] == {"message": f"Unknown or inactive mode '{mode}'. {VALID_FOR_A}", "field": "mode"}
    assert model.calls == 0 and not await AgentSession.objects.aexists() and not await Turn.objects.aexists()


async def test_a_new_conversation_starts_in_the_callers_mode_then_the_teams_default(llm, model, token, alice, team_a):
    await TeamDefaultMode.objects.acreate(team=team_a, mode=await AgentMode.objects.aget(key="ddr-authoring"))
    model.reply("one")
    model.reply("two")
    model.reply("three")
    _, body = await execute({"message": "hi"}, token)
    assert body["mode"] == "ddr-authoring"  # the team's default
    _, body = await execute({"message": "hi", "mode": "data-analysis"}, token)
    assert body["mode"] == "data-analysis"  # the caller's
    # The user's own default from Settings is the caller's choice too, where the team may use it.
    await sync_to_async(preferences_update)(user=alice, default_mode="workflow-authoring", **PREFS)
    _, body = await execute({"message": "hi"}, token)
    assert body["mode"] == "workflow-authoring"


async def test_a_users_default_the_team_cannot_use_gives_way_to_the_teams(llm, model, token, alice, team_b, b_only):
    await sync_to_async(preferences_update)(user=alice, default_mode=B_ONLY, **PREFS)  # e.g. saved while in team B
    model.reply("ok")
    status, body = await execute({"message": "hi"}, token)
    assert status == 200 and body["mode"] == "general"
