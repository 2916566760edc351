"""The workspace in a real browser, with the built-in offline model and the shipped MCP servers
(time, and sql over a freshly built demo database): sessions, Ask and Agent turns, tools, mode
proposals, branches, and who may see what."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentSession, Turn
from agents.sessions import session_create
from modes.models import ModeHistory
from tests.helpers import async_db
from tools.demo_data import build_demo_database

from .live import (
    ARTIFACTS,
    ROOT,
    expect,
    open_session,
    open_session_stream_held,
    save_artifacts,
    send,
    session_id_of,
    stream_open,
    turn_ended,
    turns,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

DDR_REQUEST = "Write a design decision record for our new caching layer"


@pytest.fixture(scope="module")
def daphne_env(tmp_path_factory) -> dict[str, str]:
    """MCP servers as in the shipped mcp.json, the sql one over a demo database of this run."""
    root = tmp_path_factory.mktemp("mcp")
    demo = root / "demo.sqlite3"
    build_demo_database(demo)
    config = {
        "mcpServers": {
            "time": {"command": "mcp-server-time"},
            "sql": {"command": "python", "args": ["-m", "tools.mcp.sql_server", f"sqlite:///{demo}"], "cwd": str(ROOT)},
        }
    }
    (root / "mcp.json").write_text(json.dumps(config))
    return {"APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(root / "mcp.json")}


@pytest.fixture
def make_session(team_a, alice):
    def make(user=alice, team=team_a, **kwargs) -> AgentSession:
        return session_create(team=team, user=user, **kwargs)

    return make


async def started_tools(turn_id: str) -> list[str]:
    """The tools a turn offered the model (its trace: Turn.trace, stored once per turn)."""
    turn = await Turn.objects.aget(pk=turn_id)
    return [schema["function"]["name"] for schema in turn.trace["tools"]]


async def test_log_in_and_start_a_session(sign_in_with_the_form, alice):
    """Composer-first: the home page is a composer; the first send creates the
    session, which opens with its first turn under way."""
    page = await sign_in_with_the_form(alice)
    await expect(page.get_by_role("heading", name="New session")).to_be_visible()
    await page.select_option("#id_mode", "general")
    await page.locator("#new-session .segmented span", has_text="Ask").click()
    await page.fill("#message", "Quarterly planning: what modes are there?")
    await page.locator("#message").press("Enter")

    await expect(page).to_have_url(re.compile(r"/sessions/[0-9a-f]{32}/$"))
    session = await AgentSession.objects.aget(pk=session_id_of(page.url))
    assert (session.user_id, session.mode, session.execution) == (alice.id, "general", "ask")
    # Named by its first message, until its first answer names it after the message's key words (the
    # offline model cannot summarise): either may be on the page by now.
    assert session.title in ("Quarterly planning: what modes are there?", "Quarterly planning"), session.title
    await expect(page.locator("#mode-badge")).to_have_text("General")
    await expect(page.locator(".segmented input[value=ask]")).to_be_checked()
    await expect(page.locator("h1")).to_have_text(re.compile(r"^Quarterly planning"))
    await expect(page.locator("#session-list li.current")).to_contain_text("Quarterly planning")
    first = turns(page).first
    await turn_ended(first)
    await expect(first.locator(".msg-user .bubble")).to_have_text("Quarterly planning: what modes are there?")
    # The tour's first answer is an answer: the modes, introduced, not a label
    # saying the model only called a tool.
    answer = first.locator(".answer")
    await expect(answer).to_contain_text("These are the modes you can work in")
    await expect(answer.get_by_role("listitem").filter(has_text="Data Analysis")).to_have_count(1)
    await expect(answer).not_to_contain_text("No answer from the model")


async def test_an_ask_turn_streams_into_the_page(sign_in, alice, make_session):
    session = await sync_to_async(make_session)(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    # Record whether streamed text (model.delta over the websocket) was ever on screen before the
    # final answer replaced it.
    await page.evaluate("""() => {
        window.__sawLiveText = false;
        new MutationObserver(() => {
            const live = [...document.querySelectorAll('.turn .live')];
            if (live.some(el => el.textContent.trim())) window.__sawLiveText = true;
        }).observe(document.getElementById('timeline'), {childList: true, subtree: true, characterData: true});
    }""")

    await send(page, "Hello, who are you?")
    turn = turns(page).first
    await expect(turn.locator(".msg-user .bubble")).to_have_text("Hello, who are you?")
    await expect(page.locator("#empty-chat")).to_have_count(0)
    await turn_ended(turn)

    await expect(turn.locator(".answer")).to_contain_text("built-in offline model")
    assert await page.evaluate("window.__sawLiveText"), "no streamed text reached the page before the answer"
    await expect(turn.locator(".turn-status")).to_contain_text("Completed")
    await expect(turn.locator(".turn-status .stop")).to_have_count(0)
    await expect(turns(page)).to_have_count(1)
    await expect(page.locator("#message")).to_be_enabled()
    await expect(page.locator("#message")).to_have_value("")
    await expect(page.locator("#message")).to_be_focused()

    saved = await Turn.objects.aget(session_id=session.id)
    assert saved.status == Turn.Status.COMPLETED and saved.user_message == "Hello, who are you?"
    assert "built-in offline model" in saved.answer and saved.model_label == "offline"
    await expect(turn).to_have_id(f"turn-{saved.id}")


async def test_turns_append_without_console_errors(sign_in, alice, make_session):
    """Each new turn reaches the timeline twice, from the send request's answer and from the
    stream's turn.started, in either order; one copy yields to the other. Neither order may go
    through an htmx error (a turn was once appended from oobErrorNoTarget: a console error whenever
    the stream came first). The first turn here forces that order by holding the send's answer until
    the turn has ended: its stale copy and busy composer must not undo what the stream drew. The
    second turn calls tools and draws a chart: every live fragment must find its target too."""
    session = await sync_to_async(make_session)(mode="data-analysis", execution="agent")
    page = await sign_in(alice)
    console_errors: list[str] = []
    page.on("console", lambda message: console_errors.append(message.text) if message.type == "error" else None)

    answered = asyncio.Event()

    async def answer_after_the_stream(route):
        response = await route.fetch()
        await turn_ended(turns(page).first)  # drawn, run and ended by the stream alone
        await route.fulfill(response=response)
        answered.set()

    await page.route("**/turns/", answer_after_the_stream)
    await open_session(page, session.id)
    await send(page, "Hello, who are you?")
    await asyncio.wait_for(answered.wait(), 30)
    await page.unroute("**/turns/")
    await send(page, "What was the revenue by month?")  # tool cards and a chart, live
    await turn_ended(turns(page).nth(1))
    await expect(turns(page).nth(1).locator(".answer img")).to_have_count(1)

    await expect(turns(page)).to_have_count(2)
    await expect(page.locator("#empty-chat")).to_have_count(0)
    await expect(page.locator("#message")).to_be_enabled()
    assert console_errors == []


async def test_a_turn_that_ended_before_the_stream_connected_is_shown(sign_in, alice, make_session):
    """A slow network: the websocket of a fresh session page connects only after the first turn
    (a fast one) has already ended. The page must still show the answer, not "Starting…" forever."""
    session = await sync_to_async(make_session)(mode="general", execution="ask")
    page = await sign_in(alice)
    turn_over = asyncio.Event()
    await open_session_stream_held(page, session.id, until=turn_over)
    await send(page, "Hello")
    await expect(turns(page).first).to_have_class(re.compile(r"\bstatus-queued\b"))  # drawn by the send request

    async def run_ended():  # in the server: the page cannot tell, its stream is not connected yet
        while not await Turn.objects.filter(session_id=session.id, status=Turn.Status.COMPLETED).aexists():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(run_ended(), 15)
    turn_over.set()

    await turn_ended(turns(page).first)
    await expect(turns(page).first.locator(".answer")).to_contain_text("built-in offline model")
    await expect(page.locator("#message")).to_be_enabled()


async def _wait_for_mcp_server(page, session_id: str, server: str) -> None:
    """The MCP servers start in the background when Daphne starts: reload until the tools panel
    says the server is ready (a user would see "starting…" until then)."""
    for _ in range(60):
        state = page.locator(f"#tools-body .server-head:has(strong:text-is('{server}')) .state")
        if await state.count() and "state-ready" in (await state.get_attribute("class") or ""):
            return
        await page.wait_for_timeout(250)  # polling a server-side state the page only shows on load
        await open_session(page, session_id)
    raise AssertionError(f"MCP server {server} never became ready")


async def test_agent_turn_answers_a_data_question_with_a_chart(sign_in, alice, make_session):
    session = await sync_to_async(make_session)(mode="data-analysis", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)

    async with page.expect_response(f"**/sessions/{session.id}/execution/") as switched:
        await page.locator(".segmented label", has_text="Agent").click()
    assert (await switched.value).ok
    await open_session(page, session.id)  # the choice is persisted, not only shown
    await expect(page.locator(".segmented input[value=agent]")).to_be_checked()
    assert (await AgentSession.objects.aget(pk=session.id)).execution == "agent"
    await _wait_for_mcp_server(page, session.id, "sql")

    await send(page, "What was the revenue by month?")
    turn = turns(page).first
    await turn_ended(turn)

    names = await turn.locator(".tool-card .tool-name").all_inner_texts()
    assert names == ["sql__list_tables", "sql__query", "image_gen"], names
    await expect(turn.locator(".tool-card.tool-ok")).to_have_count(3)
    chart = turn.locator(".answer img")
    await expect(chart).to_be_visible()
    await expect(chart).to_have_attribute("src", re.compile(rf"^/media/images/{session.id}/[0-9a-f]+\.png$"))
    await page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=await chart.element_handle())
    await expect(turn.locator(".answer table")).to_contain_text("revenue")

    saved = await Turn.objects.aget(session_id=session.id)
    assert (saved.status, saved.execution) == (Turn.Status.COMPLETED, "agent")
    called = [e.payload["name"] async for e in saved.events.filter(type="tool.called").order_by("seq")]
    assert called == ["sql__list_tables", "sql__query", "image_gen"]

    await _newest_output_in_view(page)
    await open_session(page, session.id)  # and when the page is reloaded
    await _newest_output_in_view(page)


async def _newest_output_in_view(page) -> None:
    """The timeline is scrolled to its end, also after the chart loaded and made it taller."""
    await page.wait_for_function("""() => {
        const timeline = document.getElementById('timeline'), chart = timeline.querySelector('.answer img');
        return chart && chart.complete && chart.naturalWidth > 0 && timeline.scrollHeight > timeline.clientHeight
            && timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 2;
    }""")


async def test_a_tool_switched_off_is_not_offered_to_the_next_turn(sign_in, alice, make_session):
    session = await sync_to_async(make_session)(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    chart_request = "Draw a bar chart of apples 3, pears 5"

    await send(page, chart_request)
    first = turns(page).nth(0)
    await turn_ended(first)
    await expect(first.locator(".tool-card .tool-name")).to_have_text(["image_gen"])
    await expect(first.locator(".answer img")).to_be_visible()

    await page.get_by_role("button", name="Tools").click()
    panel = page.locator("#tools-panel")
    await expect(panel).to_be_visible()
    checkbox = panel.locator("li", has=page.locator("code", has_text=re.compile("^image_gen$"))).locator("input")
    await expect(checkbox).to_be_checked()
    async with page.expect_response(f"**/sessions/{session.id}/tools/") as toggled:
        await checkbox.uncheck()
    assert (await toggled.value).ok
    await expect(checkbox).not_to_be_checked()  # the panel was redrawn from the saved toggles
    assert (await AgentSession.objects.aget(pk=session.id)).tool_toggles == {"image_gen": False}
    await page.keyboard.press("Escape")  # closes the popover
    await expect(panel).to_be_hidden()

    await send(page, chart_request)
    second = turns(page).nth(1)
    await turn_ended(second)
    await expect(second.locator(".tool-card")).to_have_count(0)
    await expect(second.locator(".answer img")).to_have_count(0)

    first_turn, second_turn = [t async for t in Turn.objects.filter(session_id=session.id).order_by("index")]
    assert "image_gen" in await started_tools(first_turn.id)
    offered = await started_tools(second_turn.id)
    assert "image_gen" not in offered and "agent_change_mode" in offered
    await open_session(page, session.id)  # still off after a reload
    await page.get_by_role("button", name="Tools").click()
    await expect(checkbox).not_to_be_checked()


async def test_switching_mode_after_a_proposal(sign_in, alice, make_session):
    session = await sync_to_async(make_session)(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)

    await send(page, DDR_REQUEST)
    proposal = turns(page).nth(0)
    await turn_ended(proposal)
    await expect(proposal.locator(".answer")).to_contain_text("DDR Authoring")
    choices = proposal.locator(".choices button.choice")
    await expect(choices).to_have_text(
        ["Stay in the current mode", "Switch this session to DDR Authoring", "New session in DDR Authoring"]
    )

    await choices.nth(1).click()
    switch = turns(page).nth(1)
    await expect(switch.locator(".msg-user .bubble")).to_have_text("2) Switch this session to DDR Authoring")
    await turn_ended(switch)
    await expect(page.locator("#mode-badge")).to_have_text("DDR Authoring")
    await expect(switch.locator(".item-mode")).to_contain_text("general → ddr-authoring")
    await expect(page.locator(".choices")).to_have_count(0)  # a proposal is answered once

    history = [h async for h in ModeHistory.objects.filter(session_id=session.id)]
    assert [(h.previous_mode, h.new_mode, h.source, h.branch) for h in history] == [
        ("general", "ddr-authoring", ModeHistory.Source.TOOL, False)
    ]
    assert (await AgentSession.objects.aget(pk=session.id)).mode == "ddr-authoring"
    await open_session(page, session.id)  # and after a reload
    await expect(page.locator("#mode-badge")).to_have_text("DDR Authoring")
    await expect(page.locator("#session-list li.current .badge")).to_have_text("ddr-authoring")
    await expect(turns(page).nth(1).locator(".item-mode")).to_contain_text("general → ddr-authoring")


async def test_a_branch_continues_in_a_linked_session(sign_in, alice, make_session):
    parent = await sync_to_async(make_session)(mode="general", execution="ask", title="Caching work")
    page = await sign_in(alice)
    await open_session(page, parent.id)

    await send(page, DDR_REQUEST)
    await turn_ended(turns(page).nth(0))
    await turns(page).nth(0).get_by_role("button", name="New session in DDR Authoring").click()
    chosen = turns(page).nth(1)
    await turn_ended(chosen)
    go = chosen.get_by_role("button", name="Continue in a new ddr-authoring session")
    await expect(go).to_be_visible()
    await expect(page.locator(".choices")).to_have_count(0)  # the proposal was answered
    # Only the new session changes mode: this one stays General.
    await expect(page.locator("#mode-badge")).to_have_text("General")
    assert (await AgentSession.objects.aget(pk=parent.id)).mode == "general"

    await go.click()
    await expect(page).not_to_have_url(re.compile(parent.id))
    child_id = session_id_of(page.url)
    await stream_open(page)
    await expect(page.locator("#mode-badge")).to_have_text("DDR Authoring")
    origin = page.locator(".sub-row")
    await expect(origin).to_contain_text("branched from Caching work")
    await expect(origin.get_by_role("link", name="Caching work")).to_have_attribute("href", f"/sessions/{parent.id}/")
    first = turns(page).nth(0)  # the request that led to the proposal, now in the new mode
    await expect(first.locator(".msg-user .bubble")).to_have_text(DDR_REQUEST)
    await turn_ended(first)

    child = await AgentSession.objects.aget(pk=child_id)
    assert (child.parent_id, child.mode, child.user_id) == (parent.id, "ddr-authoring", alice.id)
    first_turn = await Turn.objects.aget(session_id=child_id)
    assert (first_turn.mode, first_turn.status) == ("ddr-authoring", Turn.Status.COMPLETED)

    await open_session(page, parent.id)
    await expect(page.locator("#mode-badge")).to_have_text("General")
    link = page.locator(".sub-row").get_by_role("link", name=child.title)
    await expect(link).to_have_attribute("href", f"/sessions/{child_id}/")
    await expect(page.locator(".sub-row")).to_contain_text("continued in")


async def test_other_users_cannot_see_or_change_a_session(sign_in, alice, bob, carol, make_session):
    session = await sync_to_async(make_session)(mode="general", title="Alice's private plan")
    url = f"/sessions/{session.id}/"
    owner = await sign_in(alice)
    await expect(owner.locator("#session-list")).to_contain_text("Alice's private plan")

    for user in (bob, carol):  # bob shares alice's team, carol does not
        page = await sign_in(user)
        await expect(page.locator("#session-list")).not_to_contain_text("Alice's private plan")
        response = await page.goto(url)
        assert response.status == 404, (user.username, response.status)
        await page.goto("/")
        token = next(c["value"] for c in await page.context.cookies() if c["name"] == "csrftoken")
        response = await page.request.post(
            f"{url}tools/", form={"tool": "image_gen"}, headers={"X-CSRFToken": token, "HX-Request": "true"}
        )
        assert response.status == 404, (user.username, response.status)
        for action, form in [
            ("mode/", {"mode": "data-analysis"}),
            ("execution/", {"execution": "agent"}),
            ("turns/", {"message": "hi"}),
        ]:
            response = await page.request.post(f"{url}{action}", form=form, headers={"X-CSRFToken": token})
            assert response.status == 404, (user.username, action, response.status)
        # The live stream refuses the socket before it is accepted.
        outcome = await page.evaluate(
            """path => new Promise(resolve => {
            const ws = new WebSocket(`ws://${location.host}${path}`);
            ws.onopen = () => { resolve('open'); ws.close(); };
            ws.onclose = () => resolve('refused');
        })""",
            f"/ws/sessions/{session.id}/",
        )
        assert outcome == "refused", user.username

    saved = await AgentSession.objects.aget(pk=session.id)
    assert (saved.tool_toggles, saved.mode, saved.execution) == ({}, "general", "ask")
    assert not await Turn.objects.filter(session_id=session.id).aexists()
    # The same request from the owner works: the 404s above are about who asked.
    await owner.goto("/")
    token = next(c["value"] for c in await owner.context.cookies() if c["name"] == "csrftoken")
    response = await owner.request.post(f"{url}tools/", form={"tool": "image_gen"}, headers={"X-CSRFToken": token})
    assert response.status == 200
    assert (await AgentSession.objects.aget(pk=session.id)).tool_toggles == {"image_gen": False}


async def test_a_session_page_fits_a_phone(sign_in, alice, make_session):
    session = await sync_to_async(make_session)(mode="general", execution="ask")
    page = await sign_in(alice, viewport={"width": 390, "height": 844})
    await open_session(page, session.id)
    await send(page, "Draw a bar chart of apples 3, pears 5 and a_very_long_unbroken_word_" + "x" * 80)
    await turn_ended(turns(page).first)
    await expect(turns(page).first.locator(".answer img")).to_be_visible()

    widths = await page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    await save_artifacts("phone-session", [page])
    assert widths[0] <= widths[1], f"horizontal overflow: scrollWidth {widths[0]} > innerWidth {widths[1]}"


async def test_tools_outside_the_modes_policy_are_unticked_and_disabled_with_the_reason(sign_in, alice, make_session):
    """DDR Authoring offers no image_gen: its box was ticked (the session's toggle) as if the next turn
    would offer it."""
    session = await sync_to_async(make_session)(mode="ddr-authoring", execution="agent")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await page.get_by_role("button", name="Tools").click()
    panel = page.locator("#tools-panel")
    await expect(panel).to_be_visible()
    checkbox = panel.locator("li", has=page.locator("code", has_text=re.compile("^image_gen$"))).locator("input")
    await expect(checkbox).not_to_be_checked()
    await expect(checkbox).to_be_disabled()
    await expect(checkbox).to_have_accessible_description("not in the DDR Authoring mode's tool policy")
    offered = panel.locator("li", has=page.locator("code", has_text=re.compile("^agent_list_modes$"))).locator("input")
    await expect(offered).to_be_checked()
    await expect(offered).to_be_enabled()


async def test_the_tools_and_files_panels_open_under_their_buttons(sign_in, alice, make_session):
    """They floated mid-page, away from the button that opened them."""
    session = await sync_to_async(make_session)(mode="general", execution="agent")
    page = await sign_in(alice, viewport={"width": 1280, "height": 800})
    await open_session(page, session.id)
    for name, panel_id in (("Tools", "tools-panel"), ("Files", "files-panel")):
        button = page.get_by_role("button", name=name, exact=True)
        await button.click()
        panel = page.locator(f"#{panel_id}")
        await expect(panel).to_be_visible()
        opened, under = await button.bounding_box(), await panel.bounding_box()
        assert 0 <= under["y"] - (opened["y"] + opened["height"]) <= 12, (name, opened, under)
        assert abs((under["x"] + under["width"]) - (opened["x"] + opened["width"])) <= 2, (name, opened, under)
        await page.screenshot(path=str(ARTIFACTS / f"workspace-{panel_id}-anchored.png"))
        await page.keyboard.press("Escape")
        await expect(panel).to_be_hidden()
