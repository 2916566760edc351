"""Automations in a real browser, with the scripted model and the shipped notes MCP server (its
add_note asks before writing): alice makes an automation with the form, clicks Run now and sees the
run in its list; the run's tool call waits in her inbox (the header's bell counts it, pushed live to
her open session page, which shows a browser notification as she opted in), and approving it there
resumes the run: the note is written and the run's session shows the answer.
Screenshots (the form, the list, the inbox, the detail page): automations-*.png in the test's tmp_path."""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async

from agents.sessions import session_create
from aptix.preferences import preferences_set_notify_inbox
from automations.models import Automation, AutomationRun
from tests.helpers import async_db

from .live import ROOT, expect, open_session, scripted_env, stream_open

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


@pytest.fixture(scope="module")
def notes_file(tmp_path_factory):
    return tmp_path_factory.mktemp("notes") / "notes.md"


@pytest.fixture(scope="module")
def daphne_env(switchboard, tmp_path_factory, notes_file) -> dict[str, str]:
    root = tmp_path_factory.mktemp("mcp")
    config = {
        "mcpServers": {
            "notes": {"command": "python", "args": ["-m", "tools.notes_mcp", str(notes_file)], "cwd": str(ROOT)}
        }
    }
    (root / "mcp.json").write_text(json.dumps(config))
    return {**scripted_env(switchboard), "APTIX_MCP_AUTOSTART": "true", "APTIX_MCP_CONFIG": str(root / "mcp.json")}


# The browser's notifications, recorded: permission granted, each `new Notification(title)` kept.
NOTIFICATION_STUB = """
window.__notifications = [];
window.Notification = function (title) { window.__notifications.push(title); this.close = function () {}; };
window.Notification.permission = "granted";
"""


async def shot(page, folder, name: str) -> None:
    await page.screenshot(path=str(folder / f"automations-{name}.png"), full_page=True, caret="initial")


async def notes_server_ready(page, session_id: str) -> None:
    """Reload a session page until its Tools panel says the notes server is ready (the MCP servers
    start in the background with the server process; a run before would be offered no notes tool)."""
    await open_session(page, session_id)
    ready = page.locator("#tools-body .server:has(strong:text-is('notes')) .state-ready")
    for _ in range(100):
        if await ready.count():
            break
        await page.reload()
    await expect(ready).to_have_count(1)
    await stream_open(page)


async def test_an_automation_runs_waits_in_the_inbox_and_resumes_when_approved(
    sign_in, alice, team_a, model, notes_file, tmp_path
):
    page = await sign_in(alice)
    scratch = await sync_to_async(session_create)(team=team_a, user=alice)
    await notes_server_ready(page, scratch.id)

    await page.get_by_role("link", name="Automations", exact=True).click()
    await expect(page.get_by_role("heading", name="Automations", level=1)).to_be_visible()
    await expect(page.locator("#no-automations")).to_be_visible()
    await page.get_by_role("link", name="New automation").click()
    form = page.locator("#automation-form")
    await form.get_by_label("Name").fill("Supplier reminder")
    await form.get_by_label("Prompt").fill("Remind me to call the supplier on {weekday}.")
    await form.get_by_label("Agent", exact=True).check()
    await form.get_by_label("Cron schedule").fill("0 8 * * 1")
    await form.get_by_label("Time zone").fill("Europe/Paris")
    await shot(page, tmp_path, "form")
    await form.get_by_role("button", name="Create automation").click()
    await expect(page.get_by_role("heading", name="Supplier reminder", level=1)).to_be_visible()
    await expect(page.locator("#no-runs")).to_be_visible()
    automation = await Automation.objects.aget(owner=alice)
    assert (automation.cron, automation.timezone, automation.execution) == ("0 8 * * 1", "Europe/Paris", "agent")

    # Another tab of alice's, on a session page (its websocket gets the bell's count pushed), in a
    # browser where she allowed notifications and opted in to the inbox's.
    await sync_to_async(preferences_set_notify_inbox)(user=alice, on=True)
    watcher = await sign_in(alice)
    await watcher.context.add_init_script(NOTIFICATION_STUB)
    await open_session(watcher, scratch.id)
    await expect(watcher.locator("#badge-inbox")).to_have_attribute("data-count", "0")

    model.reply("", tool_calls=[("notes__add_note", {"text": "Call the supplier"})])
    await page.get_by_role("button", name="Run now").click()
    await expect(page.get_by_text("Started a run")).to_be_visible()
    run = await AutomationRun.objects.aget(automation=automation)
    row = page.locator(f"#run-{run.pk}")
    await expect(row).to_contain_text("Run now")
    for _ in range(100):  # the page is not live: reload until the run paused for the approval
        if await row.locator(".status-awaiting_approval").count():
            break
        await page.reload()
    await expect(row.locator(".run-status")).to_have_text("Awaiting approval")
    await expect(page.locator("#badge-inbox")).to_have_text("1")  # the header's bell
    await expect(watcher.locator("#badge-inbox")).to_have_text("1")  # pushed, live
    await watcher.wait_for_function("() => window.__notifications.length === 1")
    assert await watcher.evaluate("() => window.__notifications[0]") == "Aptix inbox: 1 waiting"

    await page.goto("/automations/")
    await expect(page.locator(f"#automation-{automation.pk}")).to_contain_text("Awaiting approval")
    await shot(page, tmp_path, "list")
    phone = await sign_in(alice, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    await phone.goto("/automations/")
    await expect(phone.locator("#badge-inbox")).to_have_text("1")
    await expect(phone.locator("#inbox-bell")).to_be_in_viewport(ratio=1)  # the header holds it on a phone
    await shot(phone, tmp_path, "phone")

    await page.locator("#inbox-bell").click()
    await expect(page.get_by_role("heading", name="Inbox", level=1)).to_be_visible()
    item = page.locator(".inbox-item")
    await expect(item).to_have_count(1)
    await expect(item).to_contain_text("Supplier reminder")
    await expect(item.locator("code")).to_have_text("notes__add_note")
    await expect(item.locator(".inbox-arguments")).to_contain_text('"text": "Call the supplier"')
    await shot(page, tmp_path, "inbox")

    model.reply("Noted: call the supplier.")
    await item.get_by_role("button", name="Approve").click()
    await expect(page.get_by_text("Approved: the run goes on.")).to_be_visible()
    await expect(page.locator("#inbox-empty")).to_have_text("Nothing waits for you.")
    await expect(page.locator("#badge-inbox")).to_have_text("")

    await page.goto(f"/automations/{automation.pk}/")
    for _ in range(100):
        if await row.locator(".status-completed").count():
            break
        await page.reload()
    await expect(row.locator(".run-status")).to_have_text("Completed")
    await shot(page, tmp_path, "detail")
    await row.get_by_role("link", name="Open").click()
    await expect(page).to_have_url(re.compile(r"/sessions/[0-9a-f]{32}/$"))
    await expect(page.locator("#timeline")).to_contain_text("Noted: call the supplier.")
    assert "Call the supplier" in notes_file.read_text()
