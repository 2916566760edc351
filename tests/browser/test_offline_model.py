"""The workspace with the built-in offline model, in a real browser: a branch is made once and its
button becomes a link to the child, a chart of data the turn cannot read says what it needs, and the
admin's team form fills in the slug."""

from __future__ import annotations

import re

import pytest

from agents.models import AgentSession, Turn
from tests.helpers import async_db

from .live import expect, open_session, send, session_id_of, stream_open, turn_ended, turns

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]

DDR_REQUEST = "Write a design decision record for our new caching layer"


async def test_a_used_branch_button_becomes_a_link_to_its_session(sign_in, alice, make_session):
    parent = await make_session(mode="general", execution="ask", title="Caching work")
    page = await sign_in(alice)
    await open_session(page, parent.id)
    await send(page, DDR_REQUEST)
    await turn_ended(turns(page).nth(0))
    await turns(page).nth(0).get_by_role("button", name="New session in DDR Authoring").click()
    await turn_ended(turns(page).nth(1))

    await turns(page).nth(1).get_by_role("button", name="Continue in a new ddr-authoring session").click()
    await expect(page).not_to_have_url(re.compile(parent.id))
    child_id = session_id_of(page.url)
    await stream_open(page)
    await turn_ended(turns(page).nth(0))

    await page.go_back()  # the parent again: the button is now a link to the child
    await open_session(page, parent.id)
    chosen = turns(page).nth(1)
    await expect(chosen.get_by_role("button", name=re.compile("Continue in a new"))).to_have_count(0)
    link = chosen.locator("a.branch-link")
    await expect(link).to_have_attribute("href", f"/sessions/{child_id}/")
    await link.click()
    await expect(page).to_have_url(re.compile(f"/sessions/{child_id}/$"))
    assert await AgentSession.objects.filter(parent_id=parent.id).acount() == 1
    assert await Turn.objects.filter(session_id=child_id).acount() == 1  # the request ran once


async def test_a_chart_of_data_in_ask_says_what_it_needs_instead_of_a_title_card(sign_in, alice, make_session):
    session = await make_session(mode="data-analysis", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await send(page, "Chart revenue by month for our orders data")
    turn = turns(page).last
    await turn_ended(turn)
    await expect(turn.locator(".answer")).to_contain_text("switch the header to Agent")
    await expect(turn.locator(".answer")).to_contain_text("give me the numbers")
    await expect(turn.locator(".tool-card, img")).to_have_count(0)


async def test_switching_here_carries_the_request_on_in_agent(sign_in, alice, make_session):
    """ "Switch this session to Data Analysis" used to end the turn there, leaving the user to pick Agent
    and type the request again: the request now runs on at once in the new mode and its execution."""
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    await send(page, "Chart revenue by month for our orders data")
    await turn_ended(turns(page).nth(0))
    await turns(page).nth(0).get_by_role("button", name="Switch this session to Data Analysis").click()
    await turn_ended(turns(page).nth(1))

    follow_up = turns(page).nth(2)
    await expect(follow_up.locator(".msg-user .bubble")).to_have_text("Chart revenue by month for our orders data")
    await expect(follow_up.locator(".meta").first).to_contain_text("Agent · data-analysis · continued after the switch")
    await turn_ended(follow_up)
    await expect(page.locator("#mode-badge")).to_have_text("Data Analysis")
    # The header's Ask/Agent control says Agent too, without a reload.
    await expect(page.locator('#session-execution input[value="agent"]')).to_be_checked()
    await expect(page.locator('#session-execution input[value="ask"]')).not_to_be_checked()
    rows = [t async for t in Turn.objects.filter(session_id=session.id).order_by("index")]
    assert [(t.origin, t.execution, t.mode) for t in rows][2] == ("continued", "agent", "data-analysis")
    await open_session(page, session.id)  # the same after a reload
    await expect(turns(page)).to_have_count(3)
    await expect(turns(page).nth(2).locator(".meta").first).to_contain_text("continued after the switch")


async def test_a_session_the_offline_model_cannot_name_is_named_after_what_it_drew(sign_in, alice, make_session):
    """The offline model cannot summarise: the session was left named by its message's first characters,
    so sessions that start alike ("Draw a bar chart of…") could not be told apart in the sidebar."""
    session = await make_session(mode="general", execution="ask")
    page = await sign_in(alice)
    await open_session(page, session.id)
    message = "Draw a bar chart of sales: apples 3, pears 5, plums 2"
    await send(page, message)
    await turn_ended(turns(page).first)
    # The title is written after the turn ended, by a task of its own, and shown at once (no reload).
    await expect(page.locator("h1#session-title")).to_have_text(re.compile(r"\(chart\)$"))
    title = (await AgentSession.objects.aget(pk=session.id)).title
    assert title.endswith("(chart)") and title != message, title
    await expect(page.locator("h1#session-title")).to_have_text(title)
    await expect(page.locator(f"#session-title-{session.id}")).to_have_text(title)
    await open_session(page, session.id)  # and after a reload
    await expect(page.locator("h1#session-title")).to_have_text(title)


@pytest.fixture
def root(django_user_model, password):
    return django_user_model.objects.create_superuser("root", "root@example.com", password)


async def test_the_team_form_fills_in_the_slug_from_the_name(sign_in, root):
    page = await sign_in(root)
    await page.goto("/admin/aptix/team/add/")
    await page.locator("#id_name").press_sequentially("Data Science")  # typed: keyup events
    await expect(page.locator("#id_slug")).to_have_value("data-science")
    await page.fill("#id_name", "Data Science Team")  # pasted: input events only
    await expect(page.locator("#id_slug")).to_have_value("data-science-team")
