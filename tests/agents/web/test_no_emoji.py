"""No page of the workspace shows an emoji: without an emoji font (many Linux desktops, servers'
browsers) they are empty boxes, so symbols are inline SVG icons with text alternatives
(aptix/templatetags/icons.py). Checked on every page a user sees, with every symbol drawn — a
pinned and a branched session in the sidebar, tool cards in each state, a tool's file — and in the
templates and stylesheets themselves."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from agents.approvals import DENIED_TOOL
from agents.models import Turn, TurnEvent
from agents.sessions import session_create
from aptix.invites import invite_create
from tests.helpers.emoji import emoji_in, is_emoji

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[3]


def test_the_check_knows_the_emoji_the_page_used_to_show():
    assert [c for c in "📌⬇☰✅❌⭐" if is_emoji(c)] == list("📌⬇☰✅❌⭐")
    assert emoji_in("Mode a → b · 3 steps… “quoted” ✓ ● ‹1/2›") == []  # text symbols every font has


def _tool(turn, seq, call_id, **result):
    called = {"id": call_id, "name": f"sql__{call_id}", "kind": "mcp", "arguments": "{}"}
    TurnEvent.objects.create(turn=turn, seq=seq, type="tool.called", payload=called)
    if result:
        payload = {"id": call_id, "name": f"sql__{call_id}", "duration_ms": 1.0, **result}
        TurnEvent.objects.create(turn=turn, seq=seq + 1, type="tool.result", payload=payload)


@pytest.fixture
def pages(client, alice, password, team_a):
    parent = session_create(team=team_a, user=alice, title="Revenue")
    parent.pinned_at = timezone.now()
    parent.save()
    child = session_create(team=team_a, user=alice, title="Charts")
    child.parent = parent
    child.save()
    done = Turn.objects.create(
        session=parent, index=1, user_message="Go", mode="general", response_mode="general",
        status=Turn.Status.COMPLETED, answer="Done.", finished_at=timezone.now(),
    )  # fmt: skip
    _tool(done, 1, "ok", ok=True, result="1 row")
    _tool(done, 3, "failed", ok=False, error="boom")
    _tool(done, 5, "denied", ok=False, error=DENIED_TOOL)
    _tool(done, 7, "stopped", ok=False, stopped=True)
    _tool(done, 9, "unfinished")
    running = Turn.objects.create(
        session=child, index=1, user_message="Go on", mode="general", response_mode="general",
        status=Turn.Status.RUNNING,
    )  # fmt: skip
    _tool(running, 1, "running")
    client.login(username="alice", password=password)
    return client, parent, child


def test_no_page_of_the_workspace_shows_an_emoji(pages):
    client, parent, child = pages
    urls = [
        reverse("home"),
        reverse("session-detail", args=[parent.id]),
        reverse("session-detail", args=[child.id]),
        reverse("session-list") + "?q=Go",
        reverse("settings"),
    ]
    for url in urls:
        response = client.get(url)
        html = response.content.decode()
        assert response.status_code == 200, url
        assert emoji_in(html) == [], url
    page = client.get(reverse("session-detail", args=[parent.id])).content.decode()
    # the symbols are there, as icons with a text alternative where no text says it
    assert 'class="icon icon-pin"' in page and '<span class="visually-hidden">Pinned:</span>' in page
    assert 'class="icon icon-branch"' in page and 'class="icon icon-menu"' in page
    for state in ("check", "cross", "blocked", "stop"):
        assert f'class="icon icon-{state}"' in page, state
    running = client.get(reverse("session-detail", args=[child.id])).content.decode()
    assert 'class="icon icon-more"' in running


def test_the_sign_in_and_invite_pages_show_no_emoji(client, alice, team_a):
    assert emoji_in(client.get(reverse("login")).content.decode()) == []
    _, secret = invite_create(inviter=alice, team=team_a, email="new@example.com")
    assert emoji_in(client.get(reverse("invite-accept", args=[secret])).content.decode()) == []
    client.force_login(alice)
    assert emoji_in(client.get(reverse("invites")).content.decode()) == []


def test_no_template_or_stylesheet_holds_an_emoji():
    files = [*(ROOT / "templates").rglob("*.html"), *(ROOT / "static" / "css").glob("*.css")]
    files += list((ROOT / "static" / "js").glob("*.js"))
    found = {str(p.relative_to(ROOT)): emoji_in(p.read_text()) for p in files}
    assert {name: chars for name, chars in found.items() if chars} == {}
