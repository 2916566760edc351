"""MCP Apps in the conversation against a real server (apps_server.py): the app kept with its tool's
result, the page's data for it, the frame on the apps' own origin under the app's CSP, and what the
app may do as the session's owner (its own server's tools under the approval policy, each audited;
context for the model; a message as a new turn) — and may not (another server's tool, a model-only
tool, anything from a teammate's read-only view)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.core.files.storage import default_storage
from django.test import AsyncClient, Client

from agents.approvals import DENIED_TOOL
from agents.mcp_apps.services import NOT_ITS_TOOL, TURN_BUSY
from agents.models import AppAction, Turn
from agents.runner import get_runner
from agents.sharing.services import session_share
from agents.web.timeline import render_turn
from agents.web.toolpanel import tool_panel
from agents.web.views.apps import READ_ONLY
from modes.models import AgentMode
from tests.helpers import async_db
from tools.mcp import host as host_module
from tools.mcp.host import McpHost

from .apps_server import COUNTER

pytestmark = pytest.mark.slow  # a real MCP server process

APPS = Path(__file__).with_name("apps_server.py")
APPS_ORIGIN = "http://apps.testserver"


@pytest.fixture(scope="module")
def apps_host(tmp_path_factory):
    config = tmp_path_factory.mktemp("mcp") / "mcp.json"
    entry = {"command": sys.executable, "args": [str(APPS)]}
    config.write_text(json.dumps({"mcpServers": {"apps": entry, "plain": {**entry, "apps": False}}}))
    host = McpHost(config)
    host.start()
    statuses = host.wait_until_sync(lambda s: all(x.settled for x in s), 60)
    assert [s.state for s in statuses] == ["ready", "ready"], statuses
    previous, host_module._host = host_module._host, host
    yield host
    host_module._host = previous
    host.stop()


@pytest.fixture
def apps_settings(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.APTIX_MCP_APPS_ORIGIN = APPS_ORIGIN
    settings.ALLOWED_HOSTS = ["testserver", "apps.testserver"]
    return settings


@pytest.fixture
async def counter_turn(apps_host, apps_settings, make_session, model, run_turn):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"], approval_policy=[])
    session = await make_session(mode="general", execution="agent")
    model.reply("", tool_calls=[("apps__counter", {})])
    model.reply("Here is the counter.")
    turn = await run_turn(session, text="Show me the counter")
    return turn


async def result_of(turn: Turn, name: str = "apps__counter") -> dict:
    return next(
        [e.payload async for e in turn.events.filter(type="tool.result") if e.payload["name"] == name].__iter__()
    )


async def owner(user) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(user)
    return client


def app_url(turn: Turn, call_id: str, action: str = "") -> str:
    return f"/sessions/{turn.session_id}/turns/{turn.id}/app/{action + '/' if action else ''}?call={call_id}"


@async_db
async def test_the_app_is_kept_with_its_result_and_app_only_tools_are_not_the_models(counter_turn, model):
    result = await result_of(counter_turn)
    app = result["app"]
    assert (app["server"], app["uri"], app["input"]) == ("apps", "ui://counter/app.html", {})
    assert app["result"]["structuredContent"] == {"count": 0}  # as the server sent it, for the app
    kept = ["https://api.example.com", "https://testserver", "wss://apps.testserver"]
    assert app["csp"] == {"connectDomains": kept}  # the smuggled domains dropped
    assert app["prefersBorder"] is True and app["tool"]["name"] == "counter"
    with default_storage.open(f"apps/{app['sha256']}.html") as kept:
        assert kept.read().decode() == COUNTER
    offered = {tool["function"]["name"] for tool in model.requests[0]["tools"]}
    assert {"apps__counter", "apps__secret", "plain__counter"} <= offered
    assert "apps__bump" not in offered  # "visibility": ["app"]
    html = await sync_to_async(render_turn)(counter_turn, [e async for e in counter_turn.events.order_by("seq")])
    assert f'data-app-url="{app_url(counter_turn, result["id"])}"' in html.replace("&amp;", "&")
    # The Tools panel marks the tools that come with an app (not those of a server whose apps are off).
    panel = await sync_to_async(tool_panel)(counter_turn.session)
    marked = {row.name: row.app for group in panel["servers"] for row in group.tools}
    assert marked["apps__counter"] and marked["apps__hostile"]
    assert not marked["apps__secret"] and not marked["plain__counter"]


@async_db
async def test_a_server_whose_apps_are_off_shows_none(counter_turn, model, run_turn):
    model.reply("", tool_calls=[("plain__counter", {})])
    model.reply("Done.")
    turn = await run_turn(counter_turn.session, text="And the plain one")
    assert "app" not in await result_of(turn, "plain__counter")


@async_db
async def test_the_page_gets_the_app_and_a_frame_on_the_apps_origin(counter_turn, alice):
    call_id = (await result_of(counter_turn))["id"]
    response = await (await owner(alice)).get(app_url(counter_turn, call_id))
    data = response.json()
    assert response.status_code == 200 and data["html"] == COUNTER and data["interactive"] is True
    assert data["toolResult"]["structuredContent"] == {"count": 0} and data["server"] == "apps"
    assert data["csp"] == {"connectDomains": ["https://api.example.com"]}  # Aptix's own origins taken out
    assert data["frameUrl"].startswith(f"{APPS_ORIGIN}/mcp-apps/frame/?p=")
    assert (await AsyncClient().get(app_url(counter_turn, call_id))).status_code == 401
    assert (await (await owner(alice)).get(app_url(counter_turn, "call_unknown"))).status_code == 404

    frame = data["frameUrl"].removeprefix(APPS_ORIGIN)
    served = await sync_to_async(Client().get)(frame, HTTP_HOST="apps.testserver")
    policy = served["Content-Security-Policy"]
    assert served.status_code == 200 and "frame-ancestors http://testserver" in policy
    assert "connect-src https://api.example.com;" in policy and "unsafe-eval" not in policy
    assert "X-Frame-Options" not in served and 'data-host-origin="http://testserver"' in served.content.decode()
    tampered = await sync_to_async(Client().get)(frame[:-4] + "AAAA", HTTP_HOST="apps.testserver")
    assert tampered.status_code == 400
    # The frame is on the apps' origin only, and that origin serves nothing else.
    assert (await sync_to_async(Client().get)(frame)).status_code == 404
    other = await sync_to_async(Client().get)(f"/sessions/{counter_turn.session_id}/", HTTP_HOST="apps.testserver")
    assert other.status_code == 404


@async_db
async def test_the_apps_call_waits_for_approval_and_every_call_is_audited(counter_turn, alice):
    call_id = (await result_of(counter_turn))["id"]
    client, url = await owner(alice), app_url(counter_turn, call_id, "call")
    post = lambda body: client.post(url, json.dumps(body), content_type="application/json")  # noqa: E731
    asked = await post({"name": "bump", "arguments": {"by": 2}})
    assert asked.status_code == 409 and asked.json() == {"approval": "required", "tool": "bump", "arguments": {"by": 2}}
    denied = await post({"name": "bump", "arguments": {"by": 2}, "approved": False})
    assert denied.json() == {"content": [{"type": "text", "text": "The user denied the call."}], "isError": True}
    approved = await post({"name": "bump", "arguments": {"by": 2}, "approved": True})
    assert approved.status_code == 200 and approved.json()["structuredContent"] == {"count": 2}

    for name in ("secret", "time__get_current_time"):  # model-only; another server's
        refused = await post({"name": name, "arguments": {}})
        assert refused.status_code == 403 and refused.json()["error"] == NOT_ITS_TOOL.format(server="apps", tool=name)
    rows = [(a.kind, a.tool, a.decision, a.ok) async for a in AppAction.objects.order_by("created_at")]
    assert rows == [
        ("tool_call", "bump", "denied", None),
        ("tool_call", "bump", "approved", True),
        ("tool_call", "secret", "refused", None),
        ("tool_call", "time__get_current_time", "refused", None),
    ]
    # Under a policy that lets it run, it runs without asking (and is audited as such).
    await AgentMode.objects.filter(key="general").aupdate(approval_policy=["apps.bump: auto"])
    auto = await post({"name": "bump", "arguments": {"by": 1}})
    assert auto.json()["structuredContent"] == {"count": 3}
    assert (await AppAction.objects.order_by("-created_at").afirst()).decision == "auto"
    shown = (await client.get(app_url(counter_turn, call_id))).json()["calls"]  # the card's "Called by the app"
    assert [(c["tool"], c["decision"], c["ok"]) for c in shown] == [
        ("bump", "denied", None),
        ("bump", "approved", True),
        ("secret", "refused", None),
        ("time__get_current_time", "refused", None),
        ("bump", "auto", True),
    ]
    # Those that ran or were denied are events of the card's turn, as the model's calls are.
    events = [(e.type, e.payload) async for e in counter_turn.events.filter(payload__by="app").order_by("seq")]
    ran = [a.id async for a in AppAction.objects.exclude(decision="refused").order_by("created_at")]
    assert [(kind, p["id"]) for kind, p in events] == [(k, i) for i in ran for k in ("tool.called", "tool.result")]
    assert events[0][1]["app_card"] == call_id and events[0][1]["name"] == "apps__bump"
    assert events[1][1]["error"] == DENIED_TOOL and events[3][1]["ok"] is True
    turn = await Turn.objects.aget(pk=counter_turn.pk)
    shown = await sync_to_async(render_turn)(turn, [e async for e in turn.events.order_by("seq")])
    assert shown.count("called by the app") == 3 and "Denied by you" in shown
    # The export keeps them with the tool call whose app made them.
    exported = (await client.get(f"/sessions/{counter_turn.session_id}/export.json")).json()
    [call] = [c for t in exported["turns"] for c in t["toolCalls"] if c["id"] == call_id]
    assert call["app"]["uri"] == "ui://counter/app.html"
    assert [(c["tool"], c["decision"]) for c in call["app"]["calls"]][:2] == [("bump", "denied"), ("bump", "approved")]
    markdown = (await client.get(f"/sessions/{counter_turn.session_id}/export.md")).content.decode()
    assert "App `ui://counter/app.html` shown with it." in markdown
    assert "- called by the app: `bump` (approved, ok)" in markdown


@async_db
async def test_the_app_waits_while_a_run_holds_its_turn(counter_turn, alice):
    call_id = (await result_of(counter_turn))["id"]
    await Turn.objects.filter(pk=counter_turn.pk).aupdate(status="running")  # a run numbers its events
    body = json.dumps({"name": "bump", "arguments": {}, "approved": True})
    busy = await (await owner(alice)).post(
        app_url(counter_turn, call_id, "call"), body, content_type="application/json"
    )
    assert busy.status_code == 409 and busy.json() == {"error": TURN_BUSY}
    assert not await AppAction.objects.aexists()


@async_db
async def test_a_teammate_reading_a_shared_session_sees_the_app_but_it_cannot_act(counter_turn, alice, bob):
    call_id = (await result_of(counter_turn))["id"]
    await sync_to_async(session_share)(session=counter_turn.session, user=alice, shared=True)
    data = (await (await owner(bob)).get(app_url(counter_turn, call_id))).json()
    assert data["interactive"] is False and data["html"] == COUNTER
    body = json.dumps({"name": "bump", "arguments": {}, "approved": True})
    refused = await (await owner(bob)).post(
        app_url(counter_turn, call_id, "call"), body, content_type="application/json"
    )
    assert refused.status_code == 403 and refused.json() == {"error": READ_ONLY}
    assert not await AppAction.objects.aexists()


@async_db
async def test_the_apps_context_reaches_the_next_turn_and_its_message_is_a_new_turn(counter_turn, alice, model, llm):
    call_id = (await result_of(counter_turn))["id"]
    client = await owner(alice)
    context = {"content": [{"type": "text", "text": "The user picked the blue bar."}], "structuredContent": {"bar": 3}}
    earlier = {"content": [{"type": "text", "text": "The user picked the red bar."}]}
    for update in (earlier, context):  # each replaces the card's last, in the prompt and in the audit
        answer = await client.post(
            app_url(counter_turn, call_id, "context"), json.dumps(update), content_type="application/json"
        )
        assert answer.status_code == 200
    model.reply("Noted.")
    sent = await client.post(
        app_url(counter_turn, call_id, "message"),
        json.dumps({"text": "Hello from the counter"}),
        content_type="application/json",
    )
    assert sent.status_code == 200
    turn = await Turn.objects.aget(pk=sent.json()["turn"])
    assert (turn.user_message, turn.session_id) == ("Hello from the counter", counter_turn.session_id)
    assert turn.sent_by_app == "apps"  # the timeline says "sent by the app of apps"
    kinds = [(a.kind, a.detail) async for a in AppAction.objects.order_by("created_at")]
    assert kinds == [("context", 'The user picked the blue bar.\n{"bar": 3}'), ("message", "Hello from the counter")]
    assert (await get_runner().wait(turn.id)).status == "completed"  # dispatched as the composer's are
    shown = await sync_to_async(render_turn)(turn, [e async for e in turn.events.order_by("seq")])
    assert "sent by the app of apps" in shown
    system = model.requests[-1]["messages"][0]["content"]
    assert 'The app of MCP server "apps" says: The user picked the blue bar.\n{"bar": 3}' in system
    assert "red bar" not in system


def test_aptix_declares_mcp_apps_unless_a_servers_entry_turns_them_off(apps_host):
    statuses = {status.name: status for status in apps_host.status()}
    declared = statuses["apps"].handshake.client_capabilities["extensions"]
    assert declared["io.modelcontextprotocol/ui"] == {"mimeTypes": ["text/html;profile=mcp-app"]}
    assert "io.modelcontextprotocol/ui" not in statuses["plain"].handshake.client_capabilities.get("extensions", {})
