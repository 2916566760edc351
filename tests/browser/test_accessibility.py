"""Accessibility in a real browser: axe-core (vendored,
tests/browser/axe.py) finds no violation on the login page, the home page, a session with tool cards,
an image, approval cards (waiting and decided, a blocked tool among them), the Tools popover and the
mode popover, in the light and the dark theme. Each page checked leaves a screenshot in
var/test-artifacts/ (a11y-<page>-<theme>.png) and the results go to a11y-axe-<pages>-<theme>.txt there.

The model is the built-in offline one; the notes MCP server (a real subprocess) asks for approvals."""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async

from agents.models import Turn
from agents.sessions import session_create
from aptix.preferences import preferences_update
from tests.helpers import async_db

from .axe import AXE_PAGE, axe_version, violations
from .live import ARTIFACTS, ROOT, expect, open_session, send, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

THEMES = ["light", "dark"]
CHART_REQUEST = "Draw a bar chart of apples 3, pears 5"
DDR_REQUEST = "Write a design decision record for our new caching layer"


@pytest.fixture(scope="module")
def daphne_env(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("mcp")
    notes = root / "notes.md"
    config = {
        "mcpServers": {"notes": {"command": "python", "args": ["-m", "tools.notes_mcp", str(notes)], "cwd": str(ROOT)}}
    }
    (root / "mcp.json").write_text(json.dumps(config))
    return {"APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(root / "mcp.json")}


class Audit:
    """axe's findings per page of one theme; every page checked is also kept as a screenshot."""

    def __init__(self, group: str, theme: str) -> None:
        self.group, self.theme = group, theme
        self.found: dict[str, list[str]] = {}

    async def check(self, page, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / f"a11y-{name}-{self.theme}.png"))
        self.found[name] = await violations(page)

    def report(self, version: str) -> str:
        lines = [f"axe-core {version}, {self.group} pages, {self.theme} theme"]
        for name, found in self.found.items():
            lines.append(f"{name}: {len(found)} violation(s)")
            lines.extend(f"  {line}" for line in found)
        text = "\n".join(lines) + "\n"
        (ARTIFACTS / f"a11y-axe-{self.group}-{self.theme}.txt").write_text(text)
        return text

    def assert_clean(self, version: str) -> None:
        text = self.report(version)
        assert not any(self.found.values()), text


def prefer_theme(user, theme: str):
    return sync_to_async(preferences_update)(
        user=user, default_mode="", default_execution="ask", theme=theme, notify_turns=False
    )


@pytest.mark.parametrize("theme", THEMES)
async def test_the_login_page(open_page, theme):
    audit = Audit("login", theme)
    page = await open_page(color_scheme=theme, **AXE_PAGE)  # no user yet: the system's theme
    await page.goto("/login/")
    await audit.check(page, "login")
    await page.fill("#id_username", "nobody")
    await page.fill("#id_password", "wrong")
    await page.click("form button[type=submit]")
    await expect(page.locator("[role=alert]")).to_be_visible()
    await audit.check(page, "login-error")
    audit.assert_clean(await axe_version(page))


@pytest.mark.parametrize("theme", THEMES)
async def test_the_workspace(sign_in, alice, team_a, theme):
    # The light theme on a dark system and the dark one on a light system: the preference decides.
    await prefer_theme(alice, theme)
    audit = Audit("workspace", theme)
    page = await sign_in(alice, color_scheme="dark" if theme == "light" else "light", **AXE_PAGE)
    await audit.check(page, "home")

    session = await sync_to_async(session_create)(team=team_a, user=alice, mode="general", execution="agent")
    await open_session(page, session.id)
    await audit.check(page, "empty-session")

    await send(page, CHART_REQUEST)  # a tool card and the image it drew
    first = turns(page).nth(0)
    await turn_ended(first)
    image = first.locator("img")
    await expect(image).to_be_visible()
    await page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=await image.element_handle())

    await send(page, "note: call the supplier")  # a tool approval card, waiting
    second = turns(page).nth(1)
    await expect(second.locator(".approval-card button", has_text="Allow once")).to_be_visible()
    await audit.check(page, "session-tool-approval")
    await second.locator(".approval-card button", has_text="Deny").click()  # a blocked tool card
    await turn_ended(second)

    await send(page, DDR_REQUEST)  # a mode proposal
    await turn_ended(turns(page).nth(2))
    await send(page, "2")  # typed: the mode change approval card
    await expect(turns(page).nth(3).locator(".approval-card button", has_text="Switch")).to_have_count(2)
    await audit.check(page, "session-mode-approval")
    await turns(page).nth(3).locator(".approval-card button", has_text="Switch").first.click()
    await turn_ended(turns(page).nth(3))  # now in DDR Authoring: image_gen and the notes tools are blocked
    await turn_ended(turns(page).nth(4))  # the request, carried on in DDR Authoring after the switch
    await page.evaluate("() => document.querySelectorAll('#timeline details').forEach(d => { d.open = true; })")
    await audit.check(page, "session-cards-open")

    await page.get_by_role("button", name="Tools").click()
    await expect(page.locator("#tools-body h2")).to_contain_text("DDR Authoring mode")  # redrawn on the switch
    await expect(page.locator("#tools-panel .tool-list li.blocked").first).to_be_visible()
    await audit.check(page, "tools-popover")
    await page.keyboard.press("Escape")
    await expect(page.locator("#tools-panel")).to_be_hidden()

    await page.locator("#mode-badge").click()
    await expect(page.locator("#mode-popover")).to_be_visible()
    await audit.check(page, "mode-popover")
    await page.keyboard.press("Escape")

    await turns(page).nth(4).get_by_role("button", name="Regenerate").click()  # turn 5 becomes version 1 of 2
    newest = page.locator("#timeline > article.turn").nth(4)
    await expect(newest.locator(".msg-user .versions")).to_contain_text("Version 2 of 2")
    await turn_ended(newest)
    await newest.get_by_role("button", name="Show version 1 of 2").click()
    await expect(newest.locator(".turn-version .version-note")).to_contain_text("Version 1 of 2")
    await audit.check(page, "session-version-shown")

    await page.goto("/settings/")
    await audit.check(page, "settings")
    audit.assert_clean(await axe_version(page))


@pytest.mark.parametrize("theme", THEMES)
async def test_the_invite_pages(sign_in, open_page, alice, theme, django_user_model):
    """A team owner invites from Settings → Invite people; the invitee opens the link in a browser of
    their own, is refused a short password, chooses a good one and lands signed in on the home page."""
    await sync_to_async(django_user_model.objects.create_user)(username=f"taken-{theme}", email=f"taken-{theme}@x.org")
    await prefer_theme(alice, theme)
    audit = Audit("invites", theme)
    page = await sign_in(alice, color_scheme=theme, **AXE_PAGE)
    await page.goto("/settings/")
    await page.get_by_role("link", name="Invite people").click()
    await audit.check(page, "invites")
    await page.fill("#id_email", f"taken-{theme}@x.org")
    await page.get_by_role("button", name="Invite", exact=True).click()
    await expect(page.locator("#email-error")).to_contain_text("There is already an account with this e-mail address")
    await audit.check(page, "invites-refused")
    await page.fill("#id_email", f"new-{theme}@example.com")
    await page.get_by_role("button", name="Invite", exact=True).click()
    link = page.locator("#invite-link")
    await expect(link).to_contain_text("/invite/")
    await expect(page.locator(".invites")).to_contain_text(f"new-{theme}@example.com")
    await audit.check(page, "invite-created")

    invitee = await open_page(color_scheme=theme, **AXE_PAGE)  # their own browser: not signed in
    await invitee.goto(await link.text_content())
    await expect(invitee.locator("h1")).to_have_text("Join Aptix")
    await audit.check(invitee, "invite-accept")
    await invitee.fill("#id_new_password1", "short")
    await invitee.fill("#id_new_password2", "short")
    await invitee.get_by_role("button", name="Set my password and sign in").click()
    await expect(invitee.locator(".error").first).to_contain_text("too short")
    await audit.check(invitee, "invite-accept-refused")
    await invitee.fill("#id_new_password1", "a-long-and-unusual-passphrase-42")
    await invitee.fill("#id_new_password2", "a-long-and-unusual-passphrase-42")
    await invitee.get_by_role("button", name="Set my password and sign in").click()
    await expect(invitee).to_have_url(re.compile(r"/$"))
    await expect(invitee.locator(".messages")).to_contain_text("Welcome to Team A")
    await expect(invitee.locator(".topnav")).to_contain_text(f"new-{theme}@example.com")
    audit.assert_clean(await axe_version(page))


# Records, at every change of the timeline, whether a turn showing streamed text is marked busy.
BUSY_PROBE = """() => {
    window.__busyWhileStreaming = [];
    new MutationObserver(() => {
        for (const turn of document.querySelectorAll('#timeline > .turn')) {
            const live = turn.querySelector('.live');
            if (live && live.textContent.trim()) window.__busyWhileStreaming.push(turn.getAttribute('aria-busy'));
        }
    }).observe(document.getElementById('timeline'),
               {childList: true, subtree: true, characterData: true, attributes: true});
}"""


async def test_keyboard_and_screen_reader_cues(sign_in, alice, team_a):
    session = await sync_to_async(session_create)(team=team_a, user=alice, mode="general", execution="agent")
    page = await sign_in(alice)
    await open_session(page, session.id)
    box = page.locator("#message")
    await expect(box).to_be_focused()  # ready to type on load

    await page.get_by_role("link", name="Aptix", exact=True).focus()  # the brand, first in the top bar
    await page.keyboard.press("Shift+Tab")  # the stop before it: the skip link, shown when focused
    skip = page.get_by_role("link", name="Skip to the message box")
    await expect(skip).to_be_focused()
    await expect(skip).to_be_in_viewport()
    await page.keyboard.press("Enter")
    await expect(box).to_be_focused()

    # The live region is not re-read on every delta: a streaming turn is busy until it ends.
    await page.evaluate(BUSY_PROBE)
    await send(page, "Hello, who are you?")
    first = turns(page).nth(0)
    await turn_ended(first)
    busy = await page.evaluate("() => window.__busyWhileStreaming")
    assert busy and set(busy) == {"true"}, busy
    assert await first.get_attribute("aria-busy") is None
    await expect(page.locator("#timeline")).to_have_attribute("aria-live", "polite")
    # Each side of a turn is labelled for screen readers (headings, to jump between messages).
    await expect(first.get_by_role("heading", name="You", exact=True)).to_have_count(1)
    await expect(first.get_by_role("heading", name="Aptix", exact=True)).to_have_count(1)

    # Tool states are said, not only drawn (the icons are hidden from screen readers).
    await send(page, CHART_REQUEST)
    second = turns(page).nth(1)
    await turn_ended(second)
    await expect(second.locator(".tool-card summary")).to_contain_text("image_gen")
    await expect(second.locator(".tool-card summary")).to_contain_text("done")

    await send(page, "note: call the supplier")
    third = turns(page).nth(2)
    await expect(third.locator(".tool-card summary")).to_contain_text("waiting for approval")
    await expect(third.locator(".approval-card")).to_have_accessible_name(
        "The agent wants to run notes__add_note on the notes server."
    )
    assert await third.get_attribute("aria-busy") is None  # waiting for the user: read it now
    await third.locator(".approval-card button", has_text="Deny").click()
    await turn_ended(third)
    card = third.locator(".tool-card")
    await expect(card).to_have_class(re.compile(r"\btool-blocked\b"))
    # Said as what it was, not as a failure showing the words meant for the model (they stay in the trace).
    await expect(card.locator("summary")).to_contain_text("Denied by you")
    await expect(third).not_to_contain_text("do not try it again")
    await expect(third.locator(".answer")).to_contain_text("You denied `notes__add_note`".replace("`", ""))


# Code in the languages answers show most, so that most of Pygments' token types are on the page.
CODE_SAMPLES = {
    "python": '''import os.path as p  # a comment
@cache
def f(x: int = 0x1F) -> str:
    """Docstring."""
    if x is not None and x > 3.14:
        raise ValueError(f"{x!r} {'s'}" + r"raw\\n")
    return None
class A(Exception): pass''',
    "html": '<!doctype html>\n<div class="a" id=b>&amp; <!-- note --></div>',
    "diff": "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new",
    "console": "$ ls -l\ntotal 0",
    "javascript": "const re = /ab+c/g; let t = `x ${y}`;\nfunction g() { return null; }",
    "sql": "SELECT name, COUNT(*) FROM t WHERE a = 'x' -- note",
    "bash": 'export A=1; echo "$A"  # c',
    "yaml": "key: value  # c\nlist: [1, true, null]",
    "json": '{"a": 1, "b": [true, null, "s"]}',
    "css": ".a:hover { color: #fff !important; }",
    "ruby": ":symbol; @ivar; $g = 1",
}


@pytest.mark.parametrize("theme", THEMES)
async def test_highlighted_code(sign_in, alice, team_a, theme):
    """Pygments' colours (static/css/pygments*.css) on an answer's code blocks."""
    await prefer_theme(alice, theme)
    session = await sync_to_async(session_create)(team=team_a, user=alice, mode="general")
    answer = "\n\n".join(f"```{lang}\n{code}\n```" for lang, code in CODE_SAMPLES.items())
    await Turn.objects.acreate(
        session=session, index=1, user_message="Show me code", mode="general", status="completed", answer=answer
    )
    audit = Audit("code", theme)
    page = await sign_in(alice, color_scheme="dark" if theme == "light" else "light", **AXE_PAGE)
    await open_session(page, session.id)
    await expect(page.locator(".answer .code-block")).to_have_count(len(CODE_SAMPLES))
    await audit.check(page, "code")
    audit.assert_clean(await axe_version(page))
