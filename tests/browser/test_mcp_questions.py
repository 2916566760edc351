"""An MCP server's question in a real browser (tests/tools/mcp/ask_server.py run by the live server's
MCP host, the scripted model): the card draws the form from the schema (text, number, boolean,
enum), survives a reload while the call waits, shows a wrong input's reason in the card, and Send
answers the server (also for a question that follows the tool's approval, whose id has a dot); a URL
question shows its link and Done; Decline and Cancel reach the server;
someone else cannot open the session, let alone answer. axe finds nothing on the card. Screenshots:
var/test-artifacts/."""

from __future__ import annotations

import json
import sys

import pytest
from asgiref.sync import sync_to_async

from agents.models import ToolApproval
from agents.sessions import session_create
from modes.models import AgentMode
from tests.helpers import async_db

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, ROOT, expect, open_session, scripted_env, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

ASK_SERVER = ROOT / "tests" / "tools" / "mcp" / "ask_server.py"


@pytest.fixture(scope="module")
def daphne_env(switchboard, tmp_path_factory) -> dict[str, str]:
    config = tmp_path_factory.mktemp("mcp") / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"ask": {"command": sys.executable, "args": [str(ASK_SERVER)]}}}))
    return {**scripted_env(switchboard), "APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(config)}


@pytest.fixture
def agent_session(db, team_a, alice):
    AgentMode.objects.filter(key="general").update(tool_policy=["*"])
    return sync_to_async(lambda: session_create(team=team_a, user=alice, mode="general", execution="agent"))


async def wait_for_server(page, session_id: str) -> None:
    """The MCP servers start in the background with Daphne: reload until the Tools panel says ready."""
    for _ in range(60):
        state = page.locator("#tools-body .server-head:has(strong:text-is('ask')) .state")
        if await state.count() and "state-ready" in (await state.get_attribute("class") or ""):
            return
        await page.wait_for_timeout(250)  # polling a server-side state the page only shows on load
        await open_session(page, session_id)
    raise AssertionError("MCP server ask never became ready")


async def asked(page, session, model, tool="ask__profile"):
    model.reply("", tool_calls=[(tool, {})])
    await open_session(page, session.id)
    await wait_for_server(page, session.id)
    await send(page, "Ask me")
    card = turns(page).last.locator(".approval-card")
    await expect(card).to_contain_text("The MCP server ask asks")
    return card


async def test_a_form_question_survives_a_reload_refuses_wrong_input_and_answers(
    sign_in, alice, bob, agent_session, model
):
    session = await agent_session()
    page = await sign_in(alice, **AXE_PAGE)
    card = await asked(page, session, model)
    await expect(card).to_contain_text("Tell me about you")

    await open_session(page, session.id)  # a reload while the server waits
    card = turns(page).last.locator(".approval-card")
    await expect(card.get_by_label("Name (required)")).to_be_visible()
    await expect(card.get_by_label("Colour")).to_have_value("")
    assert await violations(page) == []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await card.screenshot(path=str(ARTIFACTS / "mcp-question-form.png"), caret="initial")

    other = await sign_in(bob)  # someone else cannot even open the session
    response = await other.goto(f"/sessions/{session.id}/")
    assert response is not None and response.status == 404

    await card.get_by_label("Name (required)").fill("Ada")
    await card.get_by_label("Age").fill("-3")
    # The browser refuses it itself (min="0"); past that check, the server's reason shows in the card.
    await card.locator("form").evaluate("form => { form.noValidate = true; }")
    await card.get_by_role("button", name="Send").click()
    await expect(card.locator(".question-error")).to_have_text("Age: at least 0.")
    assert (await ToolApproval.objects.aget(turn__session_id=session.id)).is_pending

    model.reply("Thanks, Ada.")
    await card.get_by_label("Age").fill("36")
    await card.get_by_label("Subscribe").check()
    await card.get_by_label("Colour").select_option("green")
    await card.get_by_role("button", name="Send").click()
    turn = turns(page).last
    await turn_ended(turn)
    await expect(turn).to_contain_text("Thanks, Ada.")
    await expect(turn.locator(".approval-card")).to_contain_text("Answered by alice")
    row = await ToolApproval.objects.aget(turn__session_id=session.id)
    assert row.content == {"name": "Ada", "age": 36, "subscribe": True, "colour": "green"}


async def test_a_url_question_shows_the_link_and_decline_reaches_the_server(sign_in, alice, agent_session, model):
    session = await agent_session()
    page = await sign_in(alice, **AXE_PAGE)
    card = await asked(page, session, model, "ask__sign_in")
    link = card.get_by_role("link", name="https://bank.example/authorize")
    await expect(link).to_have_attribute("rel", "noopener noreferrer")
    await expect(card.get_by_role("button")).to_have_text(["Done", "Decline", "Cancel"])
    assert await violations(page) == []
    await card.screenshot(path=str(ARTIFACTS / "mcp-question-url.png"), caret="initial")
    model.reply("Not signed in.")
    await card.get_by_role("button", name="Decline").click()
    await turn_ended(turns(page).last)
    assert (await ToolApproval.objects.aget(turn__session_id=session.id)).decision == "declined"
    assert "decline None" in json.dumps(model.last_messages)


async def test_cancel_reaches_the_server(sign_in, alice, agent_session, model):
    session = await agent_session()
    page = await sign_in(alice)
    card = await asked(page, session, model)
    model.reply("Cancelled, then.")
    await card.get_by_role("button", name="Cancel").click()
    await turn_ended(turns(page).last)
    await expect(turns(page).last.locator(".approval-card")).to_contain_text("Cancelled by alice")
    assert "cancel None" in json.dumps(model.last_messages)


async def test_a_question_after_the_tools_approval_is_answered_from_its_card(sign_in, alice, agent_session, model):
    session = await agent_session()
    await AgentMode.objects.filter(key="general").aupdate(approval_policy=["ask.profile: ask"])
    model.reply("", tool_calls=[("ask__profile", {})])
    page = await sign_in(alice)
    await open_session(page, session.id)
    await wait_for_server(page, session.id)
    await send(page, "Ask me")
    turn = turns(page).last
    await turn.get_by_role("button", name="Allow once").click()

    # The call's second item: its id is the call's with ".2" (the approval has the call's own id).
    question = turn.locator(".approval-card", has_text="The MCP server ask asks")
    await expect(question).to_contain_text("Tell me about you")
    assert "." in (await question.locator("input[name=call]").input_value())
    model.reply("Thanks, Grace.")
    await question.get_by_label("Name (required)").fill("Grace")
    await question.get_by_role("button", name="Send").click()
    await turn_ended(turns(page).last)
    await expect(turns(page).last).to_contain_text("Thanks, Grace.")
    answered = await ToolApproval.objects.aget(turn__session_id=session.id, tool_call_id__contains=".")
    assert answered.content == {"name": "Grace", "subscribe": False}
