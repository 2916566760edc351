"""API tokens limited to some interfaces (the JSON API, the MCP server, the A2A agent) and to chosen
modes: a token works only where it is meant to (403 naming where it does), lists only its modes,
and a turn in any other mode is refused before anything is written."""

from __future__ import annotations

import pytest
from a2a.types.a2a_pb2 import GetExtendedAgentCardRequest
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from agents.models import AgentSession, Turn
from aptix.models import ApiToken
from aptix.tokens import api_token_create
from tests.helpers import async_db
from tests.helpers.interop import ACCEPT, INITIALIZE, a2a_client, asgi_http, mcp_client

pytestmark = async_db


async def token(user, **limits) -> str:
    _, secret = await sync_to_async(api_token_create)(user=user, name="limited", **limits)
    return secret


async def test_a_token_limited_to_mcp_is_refused_by_the_api_and_the_a2a_agent(alice):
    mcp_only = await token(alice, interfaces=["mcp"])
    async with asgi_http(mcp_only) as http:
        api = await http.get("/api/v1/modes")
        a2a = await http.post("/a2a/", json={"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"})
        mcp = await http.post("/mcp/", json=INITIALIZE, headers=ACCEPT)
    for refused, where in ((api, "JSON API"), (a2a, "A2A agent")):
        assert refused.status_code == 403
        message = refused.json()["error"]["message"]
        assert message == f"This API token is limited to the MCP server: it does not work for the {where}."
    assert mcp.status_code == 200


async def test_a_token_for_the_api_and_a2a_is_refused_by_the_mcp_server(alice):
    secret = await token(alice, interfaces=["api", "a2a"])
    async with asgi_http(secret) as http:
        mcp = await http.post("/mcp/", json=INITIALIZE, headers=ACCEPT)
        api = await http.get("/api/v1/modes")
    assert mcp.status_code == 403
    assert "limited to the JSON API and the A2A agent" in mcp.json()["error"]["message"]
    assert api.status_code == 200


async def test_a_mode_limited_token_lists_and_runs_only_its_modes_on_the_api(llm, model, alice):
    secret = await token(alice, modes=["data-analysis"])
    model.reply("ok")
    async with asgi_http(secret) as http:
        listed = await http.get("/api/v1/modes")
        other = await http.post("/api/v1/agent/execute", json={"message": "Hi", "mode": "general"})
        # No mode named: the user's default (general) is not the token's either; nothing is written.
        default = await http.post("/api/v1/agent/execute", json={"message": "Hi"})
        allowed = await http.post(
            "/api/v1/agent/execute", json={"message": "Hi", "mode": "data-analysis", "execution": "ask"}
        )
    assert [mode["key"] for mode in listed.json()] == ["data-analysis"]
    for refused in (other, default):
        assert refused.status_code == 403, refused.content
        error = refused.json()["error"]
        assert error["message"] == "This API token may not use the mode 'general': it is limited to data-analysis."
        assert error["field"] == "mode"
    assert allowed.status_code == 200 and allowed.json()["answer"] == "ok"
    assert await AgentSession.objects.acount() == 1 and await Turn.objects.acount() == 1
    assert model.calls == 1


async def test_a_mode_limited_token_cannot_continue_a_conversation_in_another_mode(llm, model, alice):
    model.reply("general answer")
    async with asgi_http(await token(alice)) as http:
        begun = (await http.post("/api/v1/agent/execute", json={"message": "Hi", "execution": "ask"})).json()
    async with asgi_http(await token(alice, modes=["data-analysis"])) as http:
        refused = await http.post(
            "/api/v1/agent/execute", json={"message": "Again", "conversationId": begun["conversationId"]}
        )
    assert refused.status_code == 403 and refused.json()["error"]["field"] == "conversationId"
    assert await Turn.objects.filter(session_id=begun["conversationId"]).acount() == 1


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
async def test_a_mode_limited_token_sees_only_its_modes_over_mcp(llm, model, alice, protocol):
    model.reply("general answer")
    async with mcp_client(await token(alice)) as client:
        general = await client.call_tool("ask_general", {"message": "Hi", "execution": "ask"})
    model.reply("analysis answer")
    async with mcp_client(await token(alice, modes=["data-analysis"]), mode=protocol) as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        prompts = [prompt.name for prompt in (await client.list_prompts()).prompts]
        refused = await client.call_tool("ask_general", {"message": "Hi"})
        allowed = await client.call_tool("ask_data-analysis", {"message": "Hi", "execution": "ask"})
        resources = [str(resource.uri) for resource in (await client.list_resources()).resources]
    assert tools == ["ask_data-analysis"]
    assert set(prompts) <= {"ask_data-analysis"}
    assert refused.is_error and "Unknown tool" in refused.content[0].text
    assert not allowed.is_error and allowed.content[0].text == "analysis answer"
    # Conversations in other modes are not the token's to read.
    assert resources == [f"aptix://conversations/{allowed.structured_content['conversationId']}"]
    assert f"aptix://conversations/{general.structured_content['conversationId']}" not in resources
    assert model.calls == 2


async def test_a_mode_limited_tokens_extended_card_lists_only_its_modes(alice):
    async with a2a_client(await token(alice, modes=["general"])) as client:
        card = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
    assert [skill.id for skill in card.skills] == ["general"]


async def test_bad_limits_are_refused_naming_them_and_nothing_is_created(alice):
    with pytest.raises(ValidationError) as bad_interface:
        await sync_to_async(api_token_create)(user=alice, interfaces=["mcp", "ftp"])
    assert bad_interface.value.message_dict == {"interfaces": ["'interfaces' must be a list of: api, mcp, a2a."]}
    with pytest.raises(CommandError, match=r"'interfaces' must be a list of: api, mcp, a2a\."):
        await sync_to_async(call_command)("create_api_token", "alice", "--only", "mcp,smtp")
    assert await ApiToken.objects.acount() == 0
    await sync_to_async(call_command)("create_api_token", "alice", "--only", "mcp, a2a", "--modes", "general")
    made = await ApiToken.objects.aget()
    assert (made.interfaces, made.modes) == (["mcp", "a2a"], ["general"])
