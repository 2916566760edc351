"""A tool call that fails with URLElicitationRequired (-32042: the server needs the user to visit a page
first) becomes a URL question, not a plain failure: the turn pauses listing it (the server's message and
its page), the page shows the card with the link (opened only on a click) and Done; Done sends the call
again once (a second -32042 is then a plain failure naming the page), Decline ends the call with a clear
result without calling the server again. Against the asking server over stdio and streamable HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents.models import ToolApproval, Turn
from aptix.tokens import api_token_create
from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.mcp import START_TIMEOUT, HttpServer, all_settled, write_config
from tools.mcp import host as host_module
from tools.mcp.host import McpHost

pytestmark = [async_db, pytest.mark.slow]  # a real MCP server process

URL = "/api/v1/agent/execute"
ASK = Path(__file__).resolve().parents[2] / "tools" / "mcp" / "ask_server.py"


@pytest.fixture(scope="module", params=["stdio", "http"])
def ask_host(request, tmp_path_factory):
    http = None
    if request.param == "http":
        http = HttpServer()
        http.listener.listen()
        fd = http.listener.fileno()
        http.process = subprocess.Popen([sys.executable, str(ASK), "--http", str(fd)], pass_fds=[fd])
        entry = {"url": http.url}
    else:
        entry = {"command": sys.executable, "args": [str(ASK)]}
    config = write_config(tmp_path_factory.mktemp("mcp") / "mcp.json", {"ask": entry})
    host = McpHost(config)  # the process-wide registry the reasoner offers from
    host.start()
    assert [s.state for s in host.wait_until_sync(all_settled, START_TIMEOUT)] == ["ready"]
    previous, host_module._host = host_module._host, host
    yield request.param
    host_module._host = previous
    host.stop()
    if http is not None:
        http.close()


@pytest.fixture
async def agent_mode():
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])


async def token_of(user):
    return (await sync_to_async(api_token_create)(user=user, name="ci"))[1]


async def post(body, token):
    response = await ServerLikeAsyncClient().post(
        URL, data=json.dumps(body), content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )
    return response.status_code, json.loads(response.content)


async def linked(model, token, account: str):
    """The model calls link_account for `account`: the turn pauses on the server's URL question."""
    first = model.reply("", tool_calls=[("ask__link_account", {"account": account})])
    status, body = await post({"message": "Use my account", "execution": "agent"}, token)
    assert status == 200 and body["status"] == "awaiting_approval", body.get("error") or body
    return first.tool_calls[0].id, body


async def answer(body, call_id, decision, token):
    reply = {"toolCallId": call_id, "decision": decision}
    return await post({"conversationId": body["conversationId"], "approvals": [reply]}, token)


def tool_result(model) -> str:
    return next(m for m in model.last_messages if m["role"] == "tool")["content"]


async def test_the_error_becomes_a_url_question_and_done_retries_the_call(
    ask_host, agent_mode, llm, model, alice, password
):
    token = await token_of(alice)
    account = f"savings-{ask_host}"
    call_id, body = await linked(model, token, account)
    [item] = body["approvals"]
    assert item["toolCallId"] == call_id and item["kind"] == "elicitation" and item["server"] == "ask"
    assert item["message"] == f"Link your {account} account first"
    assert item["url"] == f"https://bank.example/link/{account}" and "schema" not in item
    row = await ToolApproval.objects.aget(tool_call_id=call_id)
    assert row.request["mode"] == "url" and row.request["resume"]["key"] == "urlElicitationRequired"

    # the page's card: the server's message, the link (a new tab, only on a click) and Done
    page = ServerLikeAsyncClient()
    await sync_to_async(page.login)(username=alice.username, password=password)
    html = (await page.get(f"/sessions/{body['conversationId']}/")).content.decode()
    assert f"Link your {account} account first" in html
    link = f'<a href="https://bank.example/link/{account}" target="_blank" rel="noopener noreferrer">'
    assert link in html and 'value="accept" class="primary">Done</button>' in html

    model.reply("Your account is linked.")
    status, body = await answer(body, call_id, "accept", token)
    assert status == 200 and body["status"] == "completed", body
    assert tool_result(model) == f"Account {account} linked and used."  # the call, sent again once
    assert (await ToolApproval.objects.aget(tool_call_id=call_id)).decision == "accepted"


async def test_declining_ends_the_call_with_a_clear_result(ask_host, agent_mode, llm, model, alice):
    token = await token_of(alice)
    account = f"current-{ask_host}"
    call_id, body = await linked(model, token, account)
    model.reply("Understood.")
    status, body = await answer(body, call_id, "decline", token)
    assert status == 200 and body["status"] == "completed", body
    assert json.loads(tool_result(model))["error"] == (
        f'MCP tool "ask__link_account" was not run: it needs you to visit a page of its server first '
        f"(https://bank.example/link/{account}), and the question was declined."
    )
    assert (await ToolApproval.objects.aget(tool_call_id=call_id)).decision == "declined"


async def test_the_call_is_retried_once_only(ask_host, agent_mode, llm, model, alice):
    token = await token_of(alice)
    call_id, body = await linked(model, token, "never")
    model.reply("It still is not linked.")
    status, body = await answer(body, call_id, "accept", token)
    assert status == 200 and body["status"] == "completed", body
    result = json.loads(tool_result(model))["error"]
    assert result.startswith(
        'MCP tool "ask__link_account" failed: it still needs a visit to a page of its server '
        "(https://bank.example/link/never) after a retry"
    ), result
    assert await ToolApproval.objects.filter(turn_id=body["turnId"]).acount() == 1  # asked once
    assert (await Turn.objects.aget(pk=body["turnId"])).status == "completed"
