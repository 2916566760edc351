"""MCP resources attached to a message (`"resources": [{"server", "uri"}]` on /api/v1/agent/execute,
the composer's Attach): the turn keeps them (and the export lists them), the model receives their
content with the message (a listed resource and one a URI template fits), a later turn names them
without their content, and a
resource no server offers, or a malformed list, is refused naming `resources` with nothing written."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentSession, Turn
from aptix.tokens import api_token_create
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.mcp import guide_entry, ready_host

pytestmark = [async_db, pytest.mark.slow]  # a real MCP server process

EXECUTE = "/api/v1/agent/execute"
README = {"server": "guide", "uri": "guide://readme"}


@pytest.fixture(scope="module")
def guide_host(tmp_path_factory):
    with ready_host(tmp_path_factory.mktemp("mcp"), {"guide": guide_entry()}, serving=True) as host:
        yield host  # the process's host: the one the reasoner, views and API use


async def execute(user, body: dict) -> tuple[int, dict]:
    _, token = await sync_to_async(api_token_create)(user=user, name="ci")
    response = await ServerLikeAsyncClient().post(
        EXECUTE, data=json.dumps(body), content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )
    return response.status_code, json.loads(response.content)


async def test_attached_resources_reach_the_model_with_the_message(guide_host, llm, model, alice, password):
    model.reply("The guide says to greet by name.")
    person = {"server": "guide", "uri": "guide://people/ada"}
    status, body = await execute(alice, {"message": "What do these say?", "resources": [README, person, README]})
    assert status == 200, body

    turn = await Turn.objects.aget(pk=body["turnId"])
    assert turn.resources == [
        {"server": "guide", "uri": "guide://readme", "name": "readme", "mime": "text/markdown"},
        {"server": "guide", "uri": "guide://people/ada", "name": "ada", "mime": ""},
    ]
    sent = model.last_messages[-1]
    assert sent["role"] == "user" and sent["content"] == (
        "What do these say?\n\n[Attached MCP resources]\n"
        "--- readme (guide://readme, MCP server guide) ---\n"
        "[resource guide://readme (text/markdown)]\n# Guide\nGreet people by name.\n\n"
        "--- ada (guide://people/ada, MCP server guide) ---\n"
        "[resource guide://people/ada (text/plain)]\nada likes being greeted."
    )

    model.reply("You are welcome.")
    status, body = await execute(alice, {"conversationId": body["conversationId"], "message": "Thanks"})
    assert status == 200, body
    earlier = model.last_messages[-3]  # the first message, then its answer, then this one
    assert earlier["content"].startswith("What do these say?\n\n[Attached MCP resources]\n- readme (guide://readme")
    assert "Greet people by name." not in earlier["content"]

    page = ServerLikeAsyncClient()
    await sync_to_async(page.login)(username=alice.username, password=password)
    exported = json.loads((await page.get(f"/sessions/{body['conversationId']}/export.json")).content)
    assert [r["uri"] for r in exported["turns"][0]["resources"]] == ["guide://readme", "guide://people/ada"]
    markdown = (await page.get(f"/sessions/{body['conversationId']}/export.md")).content.decode()
    assert "**MCP resources:**\n\n- readme `guide://readme` (guide)" in markdown


async def test_a_resource_no_server_offers_is_refused_and_nothing_is_written(guide_host, llm, model, alice):
    status, body = await execute(
        alice, {"message": "Read it", "resources": [{"server": "guide", "uri": "file:///etc/passwd"}]}
    )
    assert (status, body["error"]) == (
        400,
        {"message": 'No MCP server "guide" here offers the resource file:///etc/passwd.', "field": "resources"},
    )
    status, body = await execute(
        alice, {"message": "Read it", "resources": [{"server": "time", "uri": "guide://readme"}]}
    )
    assert status == 400 and body["error"]["field"] == "resources"
    for bad in ["guide://readme", [{"uri": "guide://readme"}], [README] * 0 + ["x"]]:
        status, body = await execute(alice, {"message": "Read it", "resources": bad})
        assert (status, body["error"]["field"]) == (400, "resources"), bad
    assert await Turn.objects.acount() == 0 and await AgentSession.objects.acount() == 0 and model.calls == 0


async def test_a_regenerated_answer_reads_the_resources_again(guide_host, llm, model, alice):
    model.reply("First answer.")
    status, body = await execute(alice, {"message": "Summarise it", "resources": [README]})
    assert status == 200, body
    model.reply("Second answer.")
    _, token = await sync_to_async(api_token_create)(user=alice, name="ci")
    response = await ServerLikeAsyncClient().post(
        f"/api/v1/turns/{body['turnId']}/resend",
        data=json.dumps({"kind": "regenerate"}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.content
    again = await Turn.objects.aget(pk=json.loads(response.content)["turnId"])
    assert again.resources == [{"server": "guide", "uri": "guide://readme", "name": "readme", "mime": "text/markdown"}]
    assert "Greet people by name." in model.last_messages[-1]["content"]
