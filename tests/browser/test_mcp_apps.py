"""MCP Apps in a real browser: a tool's app framed on the apps' own origin (the live server's other
host name, `localhost`), under the CSP its resource declared, in a sandbox that keeps it from
Aptix's page, cookies and storage. The apps are a published one (the ext-apps project's basic example
from npm, built with the official App SDK: tests/helpers/ext_apps.py) and ours,
tests/tools/mcp/apps_server.py (`counter`, whose Bump the approval policy holds for the user, and
`hostile`, which tries what an app must not). The model is the scripted one.

APTIX_MCP_APPS_SCREENS=<dir> keeps screenshots of the steps, to look at."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys

import pytest
from asgiref.sync import sync_to_async

from agents.mcp_apps.services import NOT_ITS_TOOL
from agents.models import AppAction
from agents.sharing.services import session_share
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.ext_apps import basic_app_server

from .live import ROOT, expect, open_session, scripted_env, send, session_id_of, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

APPS_SERVER = ROOT / "tests" / "tools" / "mcp" / "apps_server.py"
SCREENS = os.environ.get("APTIX_MCP_APPS_SCREENS")
ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
OUTER_SANDBOX = "allow-scripts allow-same-origin allow-forms"


@pytest.fixture(scope="module")
def published_app() -> dict | BaseException:
    """The published app server's mcp.json entry, or why it cannot be installed: its test skips (or,
    under APTIX_REQUIRE_NODE=1, fails) with that reason, and the other tests run without it."""
    try:
        return basic_app_server()
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:
        return exc


@pytest.fixture(scope="module")
def daphne_env(switchboard, published_app, tmp_path_factory) -> dict[str, str]:
    servers = {"apps": {"command": sys.executable, "args": [str(APPS_SERVER)]}}
    if isinstance(published_app, dict):
        servers["basic"] = published_app
    config = tmp_path_factory.mktemp("mcp") / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    return {**scripted_env(switchboard), "APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(config)}


@pytest.fixture
def agent_session(db, team_a, alice):
    """A session of alice's in General, Agent, whose mode offers every tool and asks as the approval
    policy does by default (read-only MCP tools run, the others ask)."""
    from agents.sessions import session_create

    AgentMode.objects.filter(key="general").update(tool_policy=["*"], approval_policy=[])
    return sync_to_async(lambda: session_create(team=team_a, user=alice, mode="general", execution="agent"))


@pytest.fixture
def hold(switchboard, model):
    """`go = hold(answered)`: the module's model holds every chat completion after the first
    `answered` until `go` is set (a turn kept running while the test looks at it); set at the test's
    end whatever happened, lest a request wait for ever."""
    gates: list[asyncio.Event] = []

    def hold_(answered: int) -> asyncio.Event:
        go = asyncio.Event()
        gates.append(go)

        async def held(scope, receive, send):
            chat = scope["type"] == "http" and scope["path"].endswith("/chat/completions")
            if chat and len(model.requests) >= answered:
                await go.wait()
            await model(scope, receive, send)

        switchboard.model = held
        return go

    yield hold_
    for go in gates:
        go.set()


async def servers_ready(page, session_id: str, *names: str) -> None:
    """The MCP servers start in the background with Daphne: reload until the Tools panel says ready."""
    states = [page.locator(f"#tools-body .server-head:has(strong:text-is('{name}')) .state") for name in names]
    for _ in range(120):
        classes = [await s.get_attribute("class") if await s.count() else "" for s in states]
        if all("state-ready" in (c or "") for c in classes):
            return
        await page.wait_for_timeout(250)  # polling a server-side state the page only shows on load
        await open_session(page, session_id)
    raise AssertionError(f"MCP servers {names} never became ready")


def app_of(turn):
    return turn.locator("section.mcp-app")


def inner(page):
    """The app's own frame: inside the sandbox proxy's frame on the apps' origin."""
    return page.frame_locator("iframe.mcp-app-frame").frame_locator("iframe")


async def shot(page, name: str) -> None:
    if SCREENS:
        os.makedirs(SCREENS, exist_ok=True)
        await page.screenshot(path=f"{SCREENS}/{name}.png", caret="initial")  # hiding it injects a style: CSP


async def test_a_published_app_calls_its_tool_with_approval_and_sends_a_message(
    sign_in, alice, agent_session, model, published_app
):
    if isinstance(published_app, BaseException):
        raise published_app
    session = await agent_session()
    model.reply("", tool_calls=[("basic__get-time", {})])  # "-" is allowed in a tool's name
    model.reply("Here is the server's time.")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await servers_ready(page, session.id, "basic")

    await send(page, "What time is it on the server?")
    first = turns(page).last
    # get-time says nothing of reading only: the model's call asks first, as any such MCP tool's
    await first.locator(".approval-card").get_by_role("button", name="Allow once").click()
    await turn_ended(first)
    app = app_of(first)
    await expect(app.locator("iframe.mcp-app-frame")).to_have_attribute("sandbox", OUTER_SANDBOX)
    shown = inner(page).locator("#server-time")
    await expect(shown).to_have_text(ISO_TIME)  # the tool's result, given to the app by the host
    before = await shown.text_content()
    await expect(app.locator(".mcp-app-calls")).to_be_hidden()  # nothing called yet
    await shot(page, "1-published-app")

    await inner(page).get_by_role("button", name="Get Server Time").click()
    prompt = app.locator(".mcp-app-prompt")
    await expect(prompt).to_contain_text("The app asks to run get-time with no arguments.")
    await shot(page, "2-published-app-asks")
    await prompt.get_by_role("button", name="Approve").click()
    await expect(prompt).to_have_count(0)
    await expect(shown).not_to_have_text(before)
    await expect(shown).to_have_text(ISO_TIME)
    calls = app.locator(".mcp-app-calls")
    await expect(calls.locator("summary")).to_have_text("Called by the app (1)")
    await calls.locator("summary").click()
    await expect(calls.locator("li")).to_have_text([re.compile(r"^get-time — approved, succeeded \S")])
    assert [(a.tool, a.decision, a.ok) async for a in AppAction.objects.all()] == [("get-time", "approved", True)]

    model.reply("Message received.")
    await inner(page).get_by_role("button", name="Send Message").click()
    prompt = app.locator(".mcp-app-prompt")
    await expect(prompt).to_contain_text("The app wants to send this message as you:")
    await expect(prompt.locator("blockquote")).to_have_text("This is message text.")
    await shot(page, "3-published-app-message")
    await prompt.get_by_role("button", name="Send").click()  # within the app's 5 s
    await expect(turns(page)).to_have_count(2)
    second = turns(page).last
    await expect(second.locator(".user-text")).to_have_text("This is message text.")
    await turn_ended(second)
    await expect(second).to_contain_text("Message received.")
    await shot(page, "4-published-app-new-turn")


async def test_our_app_runs_sandboxed_under_its_csp_and_its_calls_wait_for_the_user(
    sign_in, alice, agent_session, model, hold, daphne_server
):
    session = await agent_session()
    model.reply("", tool_calls=[("apps__counter", {})])
    model.reply("Here is the counter.")
    go = hold(1)  # the answer waits: the turn is redrawn while its app runs
    page = await sign_in(alice)
    await open_session(page, session.id)
    await servers_ready(page, session.id, "apps")

    await send(page, "Show me the counter")
    turn = turns(page).last
    app = app_of(turn)
    log = inner(page).locator("#log")
    await expect(log).to_contain_text("theme: light")
    await expect(log).to_contain_text('result: {"count":')
    await expect(turn).to_have_class(re.compile(r"\bstatus-running\b"))
    # The turn's end redraws it whole; hx-preserve keeps the app's element and its running frame.
    await app.evaluate("element => { element.kept = true; }")
    await log.evaluate("element => { element.kept = true; }")  # in the app's own document
    go.set()
    await turn_ended(turn)
    assert await app.evaluate("element => element.kept === true")
    assert await log.evaluate("element => element.kept === true")
    await expect(log.locator("p", has_text="theme:")).to_have_count(1)  # not started again

    frame = app.locator("iframe.mcp-app-frame")
    apps_origin = f"http://localhost:{daphne_server.port}"
    await expect(frame).to_have_attribute("sandbox", OUTER_SANDBOX)
    await expect(frame).to_have_attribute("src", re.compile(rf"^{re.escape(apps_origin)}/mcp-apps/frame/\?p="))
    await expect(frame).to_have_class(re.compile(r"\bbordered\b"))  # prefersBorder
    app_frame = page.frame_locator("iframe.mcp-app-frame").locator("iframe")
    await expect(app_frame).to_have_attribute("sandbox", "allow-scripts allow-forms")

    served = await page.request.get(await frame.get_attribute("src"))
    policy = served.headers["content-security-policy"]
    assert served.status == 200 and "x-frame-options" not in served.headers
    assert policy.startswith("default-src 'none'; ")
    connect = next(d for d in policy.split("; ") if d.startswith("connect-src "))
    assert connect.startswith("connect-src https://api.example.com")  # the smuggled ones dropped
    assert "127.0.0.1" not in connect and "localhost" not in connect
    assert f"frame-ancestors {daphne_server.url}" in policy and "unsafe-eval" not in policy
    await shot(page, "5-counter")

    await inner(page).get_by_role("button", name="Bump").click()
    prompt = app.locator(".mcp-app-prompt")
    await expect(prompt).to_contain_text("The app asks to run bump with")
    await expect(prompt.locator(".approval-arguments")).to_contain_text('"by": 2')
    await shot(page, "6-counter-asks")
    await prompt.get_by_role("button", name="Approve").click()
    await expect(log).to_contain_text('bump: {"count":')
    calls = app.locator(".mcp-app-calls")
    await expect(calls.locator("summary")).to_have_text("Called by the app (1)")

    await inner(page).get_by_role("button", name="Bump").click()
    await prompt.get_by_role("button", name="Deny").click()
    await expect(log).to_contain_text('bump: [{"type":"text","text":"The user denied the call."}]')
    await expect(calls.locator("summary")).to_have_text("Called by the app (2)")
    await calls.locator("summary").click()
    await shot(page, "7-counter-called")
    listed = [re.compile(r"^bump — approved, succeeded \S"), re.compile(r"^bump — denied by you \S")]
    await expect(calls.locator("li")).to_have_text(listed)

    await open_session(page, session.id)  # the same list from the server's record
    calls = app_of(turns(page).last).locator(".mcp-app-calls")
    await expect(calls.locator("summary")).to_have_text("Called by the app (2)")
    await calls.locator("summary").click()
    await expect(calls.locator("li")).to_have_text(listed)
    decisions = [(a.tool, a.decision, a.ok) async for a in AppAction.objects.all()]
    assert decisions == [("bump", "approved", True), ("bump", "denied", None)]


async def test_a_hostile_app_reaches_nothing_but_its_own_tools(sign_in, alice, agent_session, model):
    session = await agent_session()
    model.reply("", tool_calls=[("apps__hostile", {})])
    model.reply("Shown.")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await servers_ready(page, session.id, "apps")

    await send(page, "Show me the hostile app")
    await turn_ended(turns(page).last)
    log = inner(page).locator("#log")
    await expect(log).to_contain_text("model-only tool: ")  # its last line
    for line in ("cookie: refused", "storage: refused", "fetch: refused", "popup: refused"):
        await expect(log).to_contain_text(line)
    await expect(log).to_contain_text(re.compile(r"navigate: (refused|tried)"))
    for line, tool in (("other server", "time__get_current_time"), ("model-only tool", "secret")):
        refusal = json.dumps(NOT_ITS_TOOL.format(server="apps", tool=tool))[1:-1]  # as the app's JSON.stringify
        await expect(log.locator("p", has_text=f"{line}: ")).to_contain_text(refusal)
    assert session_id_of(page.url) == session.id  # the top page stayed
    await expect(page.locator("#session-title")).to_be_visible()
    await expect(app_of(turns(page).last).locator(".mcp-app-prompt")).to_have_count(0)  # nothing asked
    calls = app_of(turns(page).last).locator(".mcp-app-calls")
    await expect(calls.locator("summary")).to_have_text("Called by the app (2)")
    await calls.locator("summary").click()
    await expect(calls.locator("li")).to_have_text(
        [
            re.compile(rf"^{tool} — refused: not a tool open to this app \S")
            for tool in ("time__get_current_time", "secret")
        ]
    )
    refused = [(a.tool, a.decision) async for a in AppAction.objects.all()]
    assert refused == [("time__get_current_time", "refused"), ("secret", "refused")]
    await shot(page, "8-hostile")


async def test_a_teammate_reading_a_shared_session_sees_the_app_but_it_cannot_act(
    sign_in, alice, bob, agent_session, model
):
    session = await agent_session()
    model.reply("", tool_calls=[("apps__counter", {})])
    model.reply("Here is the counter.")
    author = await sign_in(alice)
    await open_session(author, session.id)
    await servers_ready(author, session.id, "apps")
    await send(author, "Show me the counter")
    await turn_ended(turns(author).last)
    await sync_to_async(session_share)(session=session, user=alice, shared=True)

    reader = await sign_in(bob)
    await open_session(reader, session.id)
    await expect(reader.locator("#message")).to_have_count(0)  # read-only
    log = inner(reader).locator("#log")
    await expect(log).to_contain_text('result: {"count":')
    await inner(reader).get_by_role("button", name="Bump").click()
    await expect(log).to_contain_text("bump: ")
    await expect(log.locator("p", has_text="bump: ")).to_contain_text(
        "This is a read-only view: the app cannot call tools here."
    )
    app = app_of(turns(reader).last)
    await expect(app.locator(".mcp-app-prompt")).to_have_count(0)
    await expect(app.locator(".mcp-app-calls")).to_be_hidden()
    await shot(reader, "9-reader")
    assert not await AppAction.objects.aexists()
