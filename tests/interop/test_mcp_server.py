"""The MCP server at /mcp/ through the official MCP client, in process over the real ASGI router:
the bearer token before anything, a tool per mode of the user's team, a call that runs a turn and
continues its conversation, the user's own conversations as resources, the modes' examples as prompts."""

from __future__ import annotations

import asyncio
import base64

import pytest
from asgiref.sync import sync_to_async
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult

from agents.models import AgentSession, ToolApproval, Turn
from modes.models import ModeHistory
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.catalogs import B_ONLY, team_only_mode
from tests.helpers.interop import ACCEPT, INITIALIZE, asgi_http, mcp_client

pytestmark = async_db


@pytest.fixture
async def b_only(team_b):
    return await sync_to_async(team_only_mode)(team_b)


async def test_no_token_or_a_bad_one_is_401_with_the_bearer_challenge(alice, alice_token):
    for token in (None, "apx_wrong", "nonsense"):
        async with asgi_http(token) as http:
            response = await http.post("/mcp/", json=INITIALIZE, headers=ACCEPT)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert "bearer token" in response.json()["error"]["message"]
    async with asgi_http(alice_token) as http:
        for path in ("/mcp/", "/mcp"):  # with or without the slash, as clients are configured
            response = await http.post(path, json=INITIALIZE, headers=ACCEPT)
            assert response.status_code == 200 and response.json()["result"]["serverInfo"]["name"] == "aptix"


async def test_an_inactive_users_token_is_refused(alice, alice_token):
    alice.is_active = False
    await alice.asave()
    async with asgi_http(alice_token) as http:
        response = await http.post("/mcp/", json=INITIALIZE, headers=ACCEPT)
    assert response.status_code == 401


async def test_other_paths_still_reach_django(alice_token):
    async with asgi_http(alice_token) as http:
        response = await http.get("/api/v1/modes")
    assert response.status_code == 200 and "general" in [mode["key"] for mode in response.json()]


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
async def test_the_tools_are_the_modes_of_the_users_team(alice_token, carol_token, b_only, protocol):
    async with mcp_client(alice_token, mode=protocol) as client:
        alices = {tool.name for tool in (await client.list_tools()).tools}
    async with mcp_client(carol_token, mode=protocol) as client:
        carols = {tool.name for tool in (await client.list_tools()).tools}
    assert {"ask_general", "ask_data-analysis"} <= alices
    assert f"ask_{B_ONLY}" in carols and f"ask_{B_ONLY}" not in alices
    assert alices == carols - {f"ask_{B_ONLY}"}


async def test_another_teams_mode_cannot_be_called(llm, model, alice_token, b_only):
    async with mcp_client(alice_token) as client:
        result = await client.call_tool(f"ask_{B_ONLY}", {"message": "Open the secret playbook"})
    assert result.is_error and "Unknown tool" in result.content[0].text
    assert model.calls == 0 and await Turn.objects.acount() == 0


async def test_a_call_answers_and_a_second_continues_the_conversation(llm, model, alice, alice_token):
    model.reply("Hello from the model.")
    model.reply("Still here.")
    async with mcp_client(alice_token, name="VS Code") as client:
        first = await client.call_tool("ask_general", {"message": "Hi", "execution": "ask"})
        assert not first.is_error, first.content
        assert first.content[0].text == "Hello from the model."
        conversation_id = first.structured_content["conversationId"]
        assert first.structured_content["status"] == "completed"
        second = await client.call_tool("ask_general", {"message": "Again", "conversationId": conversation_id})
    assert second.content[0].text == "Still here."
    assert second.structured_content["conversationId"] == conversation_id
    session = await AgentSession.objects.aget(pk=conversation_id)
    assert session.user_id == alice.id and session.mode == "general"
    assert [t.user_message async for t in Turn.objects.filter(session=session).order_by("index")] == ["Hi", "Again"]


async def test_a_new_conversation_starts_in_the_tools_mode(llm, model, alice_token):
    model.reply("ok")
    async with mcp_client(alice_token) as client:
        result = await client.call_tool("ask_data-analysis", {"message": "Hi", "execution": "ask"})
    session = await AgentSession.objects.aget(pk=result.structured_content["conversationId"])
    assert session.mode == "data-analysis"


async def test_another_users_conversation_is_refused(llm, model, alice_token, carol_token):
    model.reply("Alice's answer.")
    async with mcp_client(alice_token) as client:
        alices = await client.call_tool("ask_general", {"message": "Hi", "execution": "ask"})
    conversation_id = alices.structured_content["conversationId"]
    async with mcp_client(carol_token) as client:
        result = await client.call_tool("ask_general", {"message": "Peek", "conversationId": conversation_id})
    assert result.is_error and result.content[0].text == "No conversation with this id."
    assert await Turn.objects.filter(session_id=conversation_id).acount() == 1


async def test_bad_arguments_are_tool_errors_naming_the_argument(llm, model, alice_token):
    async with mcp_client(alice_token) as client:
        empty = await client.call_tool("ask_general", {"message": "  "})
        wrong = await client.call_tool("ask_general", {"message": "Hi", "execution": "fast"})
    assert empty.is_error and "'message'" in empty.content[0].text
    assert wrong.is_error and "'execution'" in wrong.content[0].text
    assert model.calls == 0


async def test_a_failed_turn_is_a_tool_error_with_its_error(llm, model, alice_token):
    model.error(400, "The model refused.")
    async with mcp_client(alice_token) as client:
        result = await client.call_tool("ask_general", {"message": "Hi", "execution": "ask"})
    assert result.is_error and result.structured_content["status"] == "failed"
    turn = await Turn.objects.aget(pk=result.structured_content["turnId"])
    assert result.content[0].text == turn.error and turn.error


async def test_resources_are_the_users_own_conversations(llm, model, alice_token, carol_token):
    model.reply("Forty-two orders.")
    model.reply("Carol's.")
    async with mcp_client(alice_token) as client:
        alices = await client.call_tool("ask_general", {"message": "Count orders", "execution": "ask"})
    async with mcp_client(carol_token) as client:
        await client.call_tool("ask_general", {"message": "Carol here", "execution": "ask"})
    alice_id = alices.structured_content["conversationId"]
    async with mcp_client(alice_token) as client:
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        read = await client.read_resource(f"aptix://conversations/{alice_id}")
    assert listed == [f"aptix://conversations/{alice_id}"]
    text = read.contents[0].text
    assert "Count orders" in text and "Forty-two orders." in text
    assert read.contents[0].mime_type == "text/markdown"


async def test_a_crafted_resource_id_is_refused(llm, model, alice_token, carol_token):
    model.reply("Alice's secret answer.")
    async with mcp_client(alice_token) as client:
        alices = await client.call_tool("ask_general", {"message": "Secret", "execution": "ask"})
    uri = f"aptix://conversations/{alices.structured_content['conversationId']}"
    async with mcp_client(carol_token) as client:
        for crafted in (uri, "aptix://conversations/../../etc", "file:///etc/passwd"):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(crafted)
            assert refused.value.message == "No conversation with this id."


async def test_prompts_are_the_modes_example_utterances(alice_token):
    from modes.models import AgentMode

    mode = await AgentMode.objects.aget(key="data-analysis")
    async with mcp_client(alice_token) as client:
        names = {p.name for p in (await client.list_prompts()).prompts}
        prompt = await client.get_prompt("ask_data-analysis")
    assert "ask_data-analysis" in names
    assert [m.content.text for m in prompt.messages] == list(mode.example_utterances)


async def test_a_conversation_begun_over_mcp_is_labelled_with_its_client_in_the_sidebar(llm, model, alice, alice_token):
    model.reply("From VS Code.")
    model.reply("From an older client.")
    async with mcp_client(alice_token, mode="2026-07-28", name="VS Code") as client:
        modern = await client.call_tool("ask_general", {"message": "Hi", "execution": "ask"})
    # The handshake-era protocol names the client in `initialize` only: a stateless server never
    # sees it with the call, so the label names the protocol alone.
    async with mcp_client(alice_token, mode="legacy", name="Old Client") as client:
        legacy = await client.call_tool("ask_general", {"message": "Hi", "execution": "ask"})
    vscode = await AgentSession.objects.aget(pk=modern.structured_content["conversationId"])
    older = await AgentSession.objects.aget(pk=legacy.structured_content["conversationId"])
    assert (vscode.origin, older.origin) == ("via MCP: VS Code", "via MCP")

    browser = ServerLikeAsyncClient()
    await browser.aforce_login(alice)
    sidebar = (await browser.get("/sessions/")).content.decode()
    assert '<span class="muted small s-origin">via MCP: VS Code</span>' in sidebar


async def test_a_continued_conversation_keeps_its_label(llm, model, alice_token):
    model.reply("ok")
    async with mcp_client(alice_token, mode="2026-07-28") as client:
        started = await client.call_tool("ask_general", {"message": "Hi", "execution": "ask"})
        conversation_id = started.structured_content["conversationId"]
        model.reply("again")
        await client.call_tool("ask_general", {"message": "Again", "conversationId": conversation_id})
    assert (await AgentSession.objects.aget(pk=conversation_id)).origin == "via MCP: pytest-client"


@pytest.mark.parametrize(
    "public_url, site", [("https://aptix.example", "https://aptix.example"), ("", "http://testserver")]
)
@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])  # neither client takes forms (no elicitation)
async def test_a_turn_waiting_for_approval_answers_what_waits_and_where_to_decide(
    llm, model, alice_token, settings, public_url, site, protocol
):
    settings.APTIX_PUBLIC_URL = public_url  # the site's links; without it, the request's own origin
    # A client that takes no forms cannot be asked: the result says what waits.
    model.reply("", tool_calls=[("agent_change_mode", {"mode": "data-analysis", "branch": False, "reason": "Charts."})])
    async with mcp_client(alice_token, mode=protocol) as client:
        result = await client.call_tool("ask_general", {"message": "Revenue by month?", "execution": "agent"})
    assert not result.is_error and result.structured_content["status"] == "awaiting_approval"
    conversation_id = result.structured_content["conversationId"]
    assert result.content[0].text == (
        "The turn waits for your approval of `agent_change_mode`. "
        f"Decide in the browser: {site}/sessions/{conversation_id}/"
    )
    turn = await Turn.objects.aget(pk=result.structured_content["turnId"])
    assert turn.status == Turn.Status.AWAITING_APPROVAL
    assert (await AgentSession.objects.aget(pk=conversation_id)).mode == "general"  # nothing decided for the user


SWITCH = {"mode": "data-analysis", "branch": False, "reason": "Charts."}


def answering(decision: str, asked: list):
    async def callback(context, params):
        asked.append(params)
        return ElicitResult(action="accept", content={"decision": decision})

    return callback


async def test_an_approval_is_asked_through_the_client_and_approving_continues_the_turn(llm, model, alice_token):
    first = model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    model.reply("Switched.")
    model.reply("Here are your charts.")  # the turn that carries the request on in the new mode
    asked: list = []
    async with mcp_client(alice_token, mode="2026-07-28", elicitation_callback=answering("approve", asked)) as client:
        result = await client.call_tool("ask_general", {"message": "Revenue by month?", "execution": "agent"})
    assert [p.message for p in asked] == [
        "Aptix asks for your approval. Switch this conversation to the mode 'data-analysis'? Reason: Charts."
    ]
    assert asked[0].requested_schema["properties"]["decision"]["enum"] == ["approve", "deny"]
    assert not result.is_error and result.content[0].text == "Here are your charts."
    assert result.structured_content["status"] == "completed"
    follow_up = await Turn.objects.aget(pk=result.structured_content["turnId"])
    assert (follow_up.index, follow_up.mode) == (2, "data-analysis")
    session = await AgentSession.objects.aget(pk=result.structured_content["conversationId"])
    assert session.mode == "data-analysis"
    approval = await ToolApproval.objects.aget(tool_call_id=first.tool_calls[0].id)
    assert approval.decision == "approved"


async def test_denying_through_the_client_leaves_the_mode(llm, model, alice_token):
    model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    model.reply("Staying in General.")
    asked: list = []
    async with mcp_client(alice_token, mode="2026-07-28", elicitation_callback=answering("deny", asked)) as client:
        result = await client.call_tool("ask_general", {"message": "Revenue by month?", "execution": "agent"})
    assert len(asked) == 1 and result.content[0].text == "Staying in General."
    session = await AgentSession.objects.aget(pk=result.structured_content["conversationId"])
    assert session.mode == "general" and await ModeHistory.objects.acount() == 0


async def test_a_forged_request_state_is_refused(llm, model, alice_token):
    async with mcp_client(alice_token, mode="2026-07-28") as client:
        result = await client.session.call_tool(
            "ask_general", {"message": "x"}, request_state="forged", input_responses={}, allow_input_required=True
        )
    assert result.is_error and "not valid" in result.content[0].text
    assert model.calls == 0


async def test_the_answers_images_of_its_own_session_come_as_image_content(llm, model, alice_token, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    settings.APTIX_PUBLIC_URL = "https://aptix.example"
    png = b"\x89PNG\r\n\x1a\n" + b"chart"
    model.reply("Started.")
    async with mcp_client(alice_token) as client:
        first = await client.call_tool("ask_general", {"message": "Hi", "execution": "ask"})
        own = f"images/{first.structured_content['conversationId']}/{'a' * 32}.png"
        other = f"images/{'b' * 32}/{'c' * 32}.png"  # another session's: never read
        for name in (own, other):
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_bytes(png)
        model.reply(f"Here: ![chart](/media/{own}) and ![theirs](/media/{other})")
        conversation_id = first.structured_content["conversationId"]
        result = await client.call_tool("ask_general", {"message": "Chart", "conversationId": conversation_id})
    text, *images = result.content
    assert text.text == (
        f"Here: ![chart](https://aptix.example/media/{own}) and ![theirs](https://aptix.example/media/{other})"
    )
    assert [(image.mime_type, base64.b64decode(image.data)) for image in images] == [("image/png", png)]


@pytest.mark.postgres
async def test_mcp_calls_give_their_database_connections_back_to_the_pool(alice_token):
    """Each MCP call's database work gives its connection back when it ends, as a Django request does
    (server.py serves each call in a thread context of its own and closes its connections; the SDK's
    task ran every handler in the first request's context). A CI worker once ran out of pooled
    connections ("couldn't get a connection after 30.00 sec") in a later test; that run was not
    reproduced here, so this checks the property itself, on loops of their own as each test has."""
    from django.db import connection

    pool = getattr(connection, "pool", None)
    if pool is None:
        pytest.skip("the database has no connection pool (APTIX_DB_POOL off, or SQLite)")

    def out() -> int:
        stats = pool.get_stats()
        return stats["pool_size"] - stats["pool_available"]

    def on_a_loop_of_its_own() -> None:  # as each test (and each serving process) has its own loop
        async def calls() -> None:
            async with mcp_client(alice_token) as client:
                await client.list_tools()
                await client.list_resources()  # the user's conversations: a query

        asyncio.run(calls())

    await asyncio.to_thread(on_a_loop_of_its_own)
    before = await sync_to_async(out)()
    for _ in range(3):
        await asyncio.to_thread(on_a_loop_of_its_own)
    assert await sync_to_async(out)() <= before
