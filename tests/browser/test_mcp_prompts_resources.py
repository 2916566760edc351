"""MCP prompts and resources in a real browser, against tests/tools/mcp/guide_server.py run by the
live server's MCP host, with the scripted model: "/" in the composer lists the servers' prompts, the
keyboard alone chooses one, fills its arguments (the required one checked first) and puts its text
into the message box, which the model then receives; a resource attached from the Tools panel is a
chip in the composer and its content reaches the model with the message; a resource link in a tool
result opens the resource's content as plain text; the prompt form's fields suggest the values the
server completes as the user types (a <datalist>). axe finds nothing on the open list and the open
form.
Screenshots: var/test-artifacts/."""

from __future__ import annotations

import json
import sys

import pytest
from asgiref.sync import sync_to_async

from agents.sessions import session_create
from modes.models import AgentMode
from tests.helpers import async_db

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, ROOT, expect, open_session, scripted_env, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

GUIDE = ROOT / "tests" / "tools" / "mcp" / "guide_server.py"


@pytest.fixture(scope="module")
def daphne_env(switchboard, tmp_path_factory) -> dict[str, str]:
    config = tmp_path_factory.mktemp("mcp") / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"guide": {"command": sys.executable, "args": [str(GUIDE)]}}}))
    return {**scripted_env(switchboard), "APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(config)}


@pytest.fixture
def agent_session(db, team_a, alice):
    AgentMode.objects.filter(key="general").update(tool_policy=["*"])
    return sync_to_async(lambda: session_create(team=team_a, user=alice, mode="general", execution="agent"))


async def wait_for_guide(page, session_id: str) -> None:
    """The MCP servers start in the background with Daphne: reload until the Tools panel says ready."""
    for _ in range(60):
        state = page.locator("#tools-body .server-head:has(strong:text-is('guide')) .state")
        if await state.count() and "state-ready" in (await state.get_attribute("class") or ""):
            return
        await page.wait_for_timeout(250)  # polling a server-side state the page only shows on load
        await open_session(page, session_id)
    raise AssertionError("MCP server guide never became ready")


async def test_a_prompt_is_chosen_with_the_keyboard_and_sent(sign_in, alice, agent_session, model):
    session = await agent_session()
    model.reply("Dear Ada, good day.")
    page = await sign_in(alice, **AXE_PAGE)
    await open_session(page, session.id)
    await wait_for_guide(page, session.id)

    box = page.locator("#message")
    await box.focus()
    await page.keyboard.type("/")
    listbox = page.get_by_role("listbox", name="Prompts of the MCP servers")
    options = listbox.get_by_role("option")
    await expect(options).to_have_count(2)
    await expect(options.first).to_contain_text("/greeting")
    await expect(options.first).to_contain_text("Write a greeting for someone.")
    await expect(options.first).to_contain_text("guide")
    await expect(box).to_have_attribute("aria-controls", "prompt-listbox")
    await expect(box).to_have_attribute("aria-activedescendant", "prompt-option-0")
    await expect(options.first).to_have_attribute("aria-selected", "true")
    assert await violations(page) == []

    await page.keyboard.press("ArrowDown")  # house-style
    await expect(box).to_have_attribute("aria-activedescendant", "prompt-option-1")
    await page.keyboard.press("ArrowDown")  # wraps to greeting
    await expect(options.first).to_have_attribute("aria-selected", "true")
    await page.keyboard.press("Escape")  # closes the list, keeps the text
    await expect(listbox).to_have_count(0)
    await expect(box).to_have_value("/")
    await expect(box).not_to_have_attribute("aria-activedescendant", "prompt-option-0")

    await page.keyboard.type("gree")  # filters: greeting alone
    await expect(options).to_have_count(1)
    await page.keyboard.press("Enter")  # takes it, sends nothing
    form = page.get_by_role("form", name="Greeting guide", exact=True)
    name = form.get_by_label("name")
    await expect(name).to_be_focused()
    await expect(name).to_have_attribute("required", "")
    await expect(form).to_contain_text("* required")
    assert await violations(page) == []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "mcp-prompt-form.png"), caret="initial")

    await page.keyboard.type("Ada")
    await page.keyboard.press("Tab")
    await page.keyboard.type("formal")
    await page.keyboard.press("Enter")
    await expect(form).to_have_count(0)
    await expect(box).to_have_value("Write a formal greeting for Ada.")
    await expect(box).to_be_focused()
    assert model.calls == 0  # nothing was sent on the way

    await page.keyboard.press("Enter")
    await turn_ended(turns(page).last)
    assert model.last_messages[-1] == {"role": "user", "content": "Write a formal greeting for Ada."}


async def test_the_prompt_form_suggests_the_servers_values_as_the_user_types(sign_in, alice, agent_session, model):
    session = await agent_session()
    page = await sign_in(alice)
    await open_session(page, session.id)
    await wait_for_guide(page, session.id)

    box = page.locator("#message")
    await box.focus()
    await page.keyboard.type("/gree")
    options = page.get_by_role("listbox", name="Prompts of the MCP servers").get_by_role("option")
    await expect(options).to_have_count(1)
    await page.keyboard.press("Enter")
    form = page.get_by_role("form", name="Greeting guide", exact=True)
    name = form.get_by_label("name")
    await expect(name).to_have_attribute("list", "prompt-arg-0-values")
    values = form.locator("#prompt-arg-0-values option")
    await expect(values).to_have_count(2)  # asked on focus: the server's first two, "Ada" and "Alan"
    await page.keyboard.type("B")
    await expect(values).to_have_count(1)
    await expect(values.first).to_have_attribute("value", "Barbara")
    await page.keyboard.press("Tab")
    await page.keyboard.type("f")  # the tone, completed with the name given as context
    tones = form.locator("#prompt-arg-1-values option")
    await expect(tones).to_have_count(2)
    assert [await o.get_attribute("value") for o in await tones.all()] == ["formal", "friendly"]
    assert model.calls == 0


async def test_a_resource_link_opens_its_content(sign_in, alice, agent_session, model):
    session = await agent_session()
    model.reply("", tool_calls=[("guide__link", {})])
    model.reply("The readme is linked above.")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await wait_for_guide(page, session.id)

    await page.locator("#message").fill("Where is the readme?")
    await page.locator("#message").press("Enter")
    turn = turns(page).last
    await turn_ended(turn)
    link = turn.get_by_role("link", name="readme")
    async with page.context.expect_page() as opened:
        await link.click()
    tab = await opened.value
    await tab.wait_for_load_state()
    assert "Greet people by name." in await tab.locator("body").inner_text()
    assert await tab.evaluate("document.contentType") == "text/plain"


async def test_a_resource_attached_from_the_tools_panel_reaches_the_model(sign_in, alice, agent_session, model):
    session = await agent_session()
    model.reply("It says to greet people by name.")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await wait_for_guide(page, session.id)

    await page.get_by_role("button", name="Tools").click()
    await page.locator("#tools-panel .server:has(strong:text-is('guide')) .server-resources summary").click()
    await page.get_by_role("button", name="Attach readme to your message").click()
    await expect(page.locator("#tools-panel")).to_be_hidden()  # back to the message, the chip in the composer
    chip = page.locator("#composer .resource-chip")
    await expect(chip).to_contain_text("readme")
    await expect(chip).to_contain_text("guide")
    await expect(page.locator("#message")).to_be_focused()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "mcp-resource-chip.png"), caret="initial")

    await page.keyboard.type("What does the readme say?")
    await page.keyboard.press("Enter")
    turn = turns(page).last
    await turn_ended(turn)
    await expect(page.locator("#composer .resource-chip")).to_have_count(0)  # it went with the message
    await expect(turn.get_by_role("list", name="Attached MCP resources")).to_contain_text("resource of guide")
    sent = model.last_messages[-1]["content"]
    assert sent.startswith("What does the readme say?\n\n[Attached MCP resources]\n--- readme (guide://readme")
    assert "Greet people by name." in sent
