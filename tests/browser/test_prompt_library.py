"""The prompt library in a real browser, with the scripted model: alice, team A's owner, reaches
Settings → Prompts from Settings, is told what is wrong with a bad `{{variable}}` (her draft kept),
and saves a prompt shared with the team; bob, a member, reads it there (no Edit) and uses it from the
composer's `/` menu: its variable asked in the small form, the filled text put into the message box,
sent, received by the model and counted. axe finds nothing on the library (light and dark), the edit
page with its delete confirmation, and the open menu and form; the flows without axe keep the
Content-Security-Policy and fail on any violation.
Screenshots: var/test-artifacts/prompt-library-*.png."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.models import SavedPrompt
from agents.prompts.services import prompt_create
from agents.sessions import session_create
from tests.helpers import async_db

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect, open_session, scripted_env, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

TEXT = "Write the release notes for {{version}}, short and plain."


@pytest.fixture(scope="module")
def daphne_env(switchboard) -> dict[str, str]:
    return scripted_env(switchboard)


@pytest.fixture
def bobs_session(db, team_a, bob):
    return sync_to_async(lambda: session_create(team=team_a, user=bob))


@pytest.fixture
def shared_prompt(db, team_a, alice):
    return sync_to_async(lambda: prompt_create(user=alice, title="Release notes", text=TEXT, team=team_a))


async def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"prompt-library-{name}.png"), full_page=True, caret="initial")


async def test_the_owner_saves_a_prompt_shared_with_the_team(sign_in, alice):
    page = await sign_in(alice, **AXE_PAGE)
    await page.get_by_role("link", name="Settings").click()
    await page.get_by_role("link", name="Prompts", exact=True).click()
    await expect(page.get_by_role("heading", name="Prompts", level=1)).to_be_visible()
    await expect(page.locator("#no-own-prompts")).to_be_visible()
    assert await violations(page) == []

    form = page.locator("#prompt-new-form")
    await form.get_by_label("Title").fill("Release notes")
    await form.get_by_label("Text").fill("Write the release notes for {{release version}}.")
    await form.get_by_label("Who can use it").select_option(label="Everyone in Team A")
    await form.get_by_role("button", name="Save prompt").click()
    text = page.locator("#prompt-new-form").get_by_label("Text")
    await expect(text).to_have_attribute("aria-invalid", "true")
    await expect(page.locator("#prompt-new-form .error")).to_contain_text(
        'The variable "{{release version}}" has a bad name'
    )
    await expect(text).to_have_value("Write the release notes for {{release version}}.")  # the draft stays
    assert await violations(page) == []
    await shot(page, "error")
    assert await sync_to_async(SavedPrompt.objects.count)() == 0

    await text.fill(TEXT)
    await page.locator("#prompt-new-form").get_by_role("button", name="Save prompt").click()
    await expect(page.get_by_text("“Release notes” was saved.")).to_be_visible()
    item = page.locator("#shared-prompts-heading + ul li")
    await expect(item).to_have_count(1)
    await expect(item.locator("code.variable")).to_have_text("version")
    await expect(item).to_contain_text("used 0 times")
    await item.get_by_text("Text").click()
    await expect(item.locator("pre")).to_have_text(TEXT)
    assert await violations(page) == []
    await shot(page, "owner-light")
    saved = await sync_to_async(SavedPrompt.objects.select_related("team").get)()
    assert (saved.title, saved.text, saved.team.slug) == ("Release notes", TEXT, "team-a")

    await item.get_by_role("link", name="Edit Release notes").click()
    await expect(page.get_by_label("Who can use it")).to_have_value("team-a")
    await page.get_by_role("button", name="Delete…").click()
    confirm = page.get_by_role("alertdialog", name="Delete “Release notes”?")
    await expect(confirm).to_be_visible()
    assert await violations(page) == []
    await shot(page, "delete-confirm")
    await confirm.get_by_role("button", name="Cancel").click()
    await expect(confirm).to_be_hidden()

    dark = await sign_in(alice, color_scheme="dark", **AXE_PAGE)
    await dark.goto("/settings/prompts/")
    await expect(dark.locator("#shared-prompts-heading + ul li")).to_have_count(1)
    assert await violations(dark) == []
    await shot(dark, "owner-dark")


async def test_a_member_uses_the_teams_prompt_from_the_slash_menu(sign_in, bob, shared_prompt, bobs_session, model):
    prompt = await shared_prompt()
    model.reply("Version 2.4: faster uploads.")
    page = await sign_in(bob)  # the CSP in force: any violation fails the test

    await page.goto("/settings/prompts/")
    item = page.locator("#shared-prompts-heading + ul li")
    await expect(item).to_contain_text("Release notes")
    await expect(item).to_contain_text("read-only")
    await expect(item).to_contain_text("by alice")
    await expect(item.get_by_role("link", name="Edit Release notes")).to_have_count(0)
    await expect(page.get_by_label("Who can use it")).to_have_count(0)  # a member shares nothing

    session = await bobs_session()
    await open_session(page, session.id)
    box = page.locator("#message")
    await box.focus()
    await page.keyboard.type("/rel")
    listbox = page.get_by_role("listbox", name="Saved prompts and prompts of the MCP servers")
    option = listbox.get_by_role("option")
    await expect(option).to_have_count(1)
    await expect(option).to_contain_text("/Release notes")
    await expect(option).to_contain_text("Team A")
    await expect(option).to_have_attribute("aria-selected", "true")
    await page.keyboard.press("Enter")
    form = page.get_by_role("form", name="Release notes Team A", exact=True)
    version = form.get_by_label("version")
    await expect(version).to_be_focused()
    await expect(version).to_have_attribute("required", "")
    await shot(page, "menu-form")

    await page.keyboard.type("2.4")
    await page.keyboard.press("Enter")
    await expect(form).to_have_count(0)
    filled = "Write the release notes for 2.4, short and plain."
    await expect(box).to_have_value(filled)
    await expect(box).to_be_focused()
    assert model.calls == 0  # nothing sent on the way
    assert (await sync_to_async(SavedPrompt.objects.get)(pk=prompt.pk)).use_count == 1

    await page.keyboard.press("Enter")
    await turn_ended(turns(page).last)
    assert model.last_messages[-1] == {"role": "user", "content": filled}
    await page.goto("/settings/prompts/")
    await expect(page.locator("#shared-prompts-heading + ul li")).to_contain_text("used 1 time ")


async def test_the_menu_and_its_form_pass_axe(sign_in, bob, shared_prompt, bobs_session):
    await shared_prompt()
    await sync_to_async(prompt_create)(user=bob, title="Standup", text="Yesterday I did {{done}}.")
    session = await bobs_session()
    page = await sign_in(bob, color_scheme="dark", **AXE_PAGE)
    await open_session(page, session.id)
    await page.locator("#message").focus()
    await page.keyboard.type("/")
    options = page.get_by_role("listbox", name="Saved prompts and prompts of the MCP servers").get_by_role("option")
    await expect(options).to_have_count(2)
    await expect(options.first).to_contain_text("Release notes")  # by title: Release notes, Standup
    await expect(options.last).to_contain_text("yours")
    assert await violations(page) == []
    await shot(page, "menu-dark")
    await page.keyboard.press("ArrowDown")
    await page.keyboard.press("Enter")
    form = page.get_by_role("form", name="Standup yours", exact=True)
    await expect(form.get_by_label("done")).to_be_focused()
    await page.keyboard.press("Enter")  # the required blank is empty: the browser says so, nothing is filled
    await expect(form).to_be_visible()
    assert await violations(page) == []
    await page.keyboard.press("Escape")
    await expect(form).to_have_count(0)
    await expect(page.locator("#message")).to_have_value("/")
