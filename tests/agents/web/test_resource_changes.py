"""An attached MCP resource whose server offers subscriptions (the mcp SDK 1.30 server, 2025-11-25):
the turn that reads it subscribes to it, and when the server says it changed the message says
"changed since attached" with the time (Turn.resources' `changedAt`), in the page; a message that
attached another resource, or one of another server, is left alone, and the message sent again starts
without the mark."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async

from agents.conversations import turn_resend
from agents.models import AgentSession, Turn
from aptix.tokens import api_token_create
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.mcp import guide_entry, ready_host
from tests.helpers.sdk1 import sdk1_entry
from tools.registry import mcp_registry

pytestmark = [async_db, pytest.mark.slow]  # real MCP server processes

EXECUTE = "/api/v1/agent/execute"
NOTE = {"server": "sdk1", "uri": "note://today"}
README = {"server": "guide", "uri": "guide://readme"}


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    servers = {"sdk1": sdk1_entry(initTimeout=60), "guide": guide_entry()}
    with ready_host(tmp_path_factory.mktemp("mcp"), servers, serving=True) as host:
        yield host  # the process's host: the one the reasoner, views and API use


async def execute(user, body: dict) -> tuple[int, dict]:
    _, token = await sync_to_async(api_token_create)(user=user, name="ci")
    response = await ServerLikeAsyncClient().post(
        EXECUTE, data=json.dumps(body), content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )
    return response.status_code, json.loads(response.content)


async def changed_at(turn_id: str, timeout: float = 30.0) -> list[str | None]:
    """Each resource's `changedAt` once one has it (the listener writes it from the server's
    notification, on its own thread), within `timeout` (it crosses a server subprocess and two threads;
    the two misses in CI were a listener another test module had unset, not a slow notification)."""
    end = asyncio.get_running_loop().time() + timeout
    while True:
        turn = await Turn.objects.aget(pk=turn_id)
        marks = [r.get("changedAt") for r in turn.resources]
        if any(marks) or asyncio.get_running_loop().time() > end:
            return marks
        await asyncio.sleep(0.05)


async def test_a_changed_resource_is_marked_on_the_message(serving, llm, model, alice, password):
    model.reply("Your note says to buy milk.")
    status, body = await execute(alice, {"message": "What is on my note?", "resources": [NOTE, README]})
    assert status == 200 and body["status"] == "completed", body
    assert "Buy milk." in model.last_messages[-1]["content"]
    assert serving._supervisors["sdk1"].subscribed == {"note://today"}  # the turn's read subscribed
    model.reply("Noted.")
    status, other = await execute(alice, {"message": "And the guide?", "resources": [README]})
    assert status == 200, other

    page = ServerLikeAsyncClient()
    await sync_to_async(page.login)(username=alice.username, password=password)
    before = (await page.get(f"/sessions/{body['conversationId']}/")).content.decode()
    assert "changed since attached" not in before

    result = await mcp_registry.get("sdk1__edit_note").execute('{"text": "Buy bread."}', None)
    assert result.successful, result.error_message
    note_mark, readme_mark = await changed_at(body["turnId"])
    assert note_mark is not None and readme_mark is None
    assert [r.get("changedAt") for r in (await Turn.objects.aget(pk=other["turnId"])).resources] == [None]

    html = (await page.get(f"/sessions/{body['conversationId']}/")).content.decode()
    assert "changed since attached" in html
    assert f'<time datetime="{note_mark}">{note_mark[:10]} {note_mark[11:16]} UTC</time>' in html

    # sent again (Regenerate), the message is read anew: not "changed since" it yet
    session = await AgentSession.objects.aget(pk=body["conversationId"])
    again = await sync_to_async(turn_resend)(session=session, turn_id=body["turnId"], kind="regenerate")
    assert [r.get("changedAt") for r in again.resources] == [None, None]
    assert [r["uri"] for r in again.resources] == ["note://today", "guide://readme"]
