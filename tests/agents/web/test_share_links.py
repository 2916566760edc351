"""Share links on the site: the author makes one from the session menu and sees its address once on
Settings → Shared; a team link opens for the team's signed-in members only (a signed-out visitor signs
in first, anyone else gets the 404 of a missing page); a public link opens without signing in only
while APTIX_PUBLIC_LINKS is on, without tool calls or files unless ticked; a revoked or expired link,
or one whose session was deleted, says so (410) and shows nothing; opening links is rate-limited per
address; making and revoking are logged."""

from __future__ import annotations

import hashlib
import logging
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.models import ShareLink
from agents.sessions import session_create, session_delete
from agents.sharing.links import ERROR_DAYS, ERROR_DELETED, ERROR_EXPIRED, ERROR_PUBLIC_OFF, ERROR_REVOKED
from agents.sharing.services import session_share
from modes.models import ModeHistory
from tests.helpers.turns import add_events, ended_turn

pytestmark = pytest.mark.django_db

ANSWER = "Revenue was up 4% in Q3."
CALL = {"id": "call_9", "name": "sql__run_query", "kind": "mcp", "arguments": '{"sql": "select 1"}'}
RESULT = {"id": "call_9", "ok": True, "result": "secret-ledger-total 1234", "duration_ms": 5}


@pytest.fixture
def session(team_a, alice):
    """Alice's session: a finished turn that ran a tool and whose message carried a file."""
    session = session_create(team=team_a, user=alice, title="Quarterly numbers", execution="agent")
    attached = {"fileId": "f" * 32, "name": "ledger.csv", "kind": "table", "size": 120}
    turn = ended_turn(session, status="completed", message="How did Q3 go?", answer=ANSWER, files=[attached])
    add_events(
        turn,
        ("turn.started", {}),
        ("model.message", {"step": 1, "content": "", "tool_calls": [CALL], "usage": {}}),
        ("tool.called", CALL),
        ("tool.result", RESULT),
        ("turn.completed", {"status": "completed", "answer": ANSWER}),
    )
    return session


def make_link(client: Client, session, **form) -> tuple:
    """Post the session menu's form; the link's address from the page the redirect shows (once)."""
    response = client.post(reverse("share-link-create", args=[session.id]), {"kind": "team", "days": "7", **form})
    assert response.status_code == 303 and response["Location"] == reverse("settings-shared") + "#new-link"
    page = client.get(reverse("settings-shared")).content.decode()
    url = re.search(r'<code id="new-link-url">(http://testserver/s/[^<]+/)</code>', page).group(1)
    return url.removeprefix("http://testserver"), ShareLink.objects.get()


def test_the_author_makes_a_link_and_sees_its_address_once(client, alice, session):
    client.force_login(alice)
    path, link = make_link(client, session)
    secret = path.removeprefix("/s/").rstrip("/")
    assert len(secret) >= 43  # 32 random bytes, URL-safe base64: 256 bits
    assert link.token_hash == hashlib.sha256(secret.encode()).hexdigest()  # only its digest is stored
    assert secret not in str(ShareLink.objects.values().get())
    assert link.kind == "team"
    assert timedelta(days=6, hours=23) < link.expires_at - timezone.now() <= timedelta(days=7)
    again = client.get(reverse("settings-shared")).content.decode()
    assert secret not in again and "Quarterly numbers" in again  # listed, its address not shown again


def test_a_team_link_opens_for_the_team_only(client, alice, bob, carol, session):
    client.force_login(alice)
    path, link = make_link(client, session, days="30")
    client.force_login(bob)  # the session is not shared with the team: the link alone lets him read it
    page = client.get(path)
    html = page.content.decode()
    assert page.status_code == 200 and ANSWER in html and "How did Q3 go?" in html
    assert '<meta name="robots" content="noindex, nofollow">' in html and page["X-Robots-Tag"] == "noindex, nofollow"
    assert 'id="message"' not in html and 'id="sidebar"' not in html and "ws-connect" not in html
    assert "Continue as my copy" not in html and 'class="copy"' not in html
    assert client.get(reverse("session-detail", args=[session.id])).status_code == 404  # no more than the link
    client.force_login(carol)
    refused = client.get(path)
    assert refused.status_code == 404 and ANSWER not in refused.content.decode()
    assert "Not found" in refused.content.decode()  # templates/404.html, as any missing page
    link.refresh_from_db()
    assert link.opened_count == 1 and link.last_opened_at is not None


def test_a_signed_out_visitor_of_a_team_link_signs_in_then_comes_back(client, alice, bob, session, password):
    client.force_login(alice)
    path, _ = make_link(client, session)
    client.logout()
    response = client.get(path)
    assert response.status_code == 302 and response["Location"] == f"{reverse('login')}?next={path}"
    signed_in = client.post(response["Location"], {"username": "bob", "password": password, "next": path})
    assert signed_in.status_code == 302 and signed_in["Location"] == path
    assert ANSWER in client.get(path).content.decode()


def test_a_team_link_shows_the_tool_calls_and_files_as_a_reader_sees_them(client, alice, bob, session):
    client.force_login(alice)
    path, link = make_link(client, session)
    assert (link.include_tools, link.include_files) == (True, True)  # the team's reading, whatever was ticked
    client.force_login(bob)
    html = client.get(path).content.decode()
    assert "sql__run_query" in html and "secret-ledger-total" in html and "ledger.csv" in html
    assert reverse("file-download", args=["f" * 32]) not in html  # named, not a download


def test_public_links_are_refused_while_the_setting_is_off(client, alice, session, settings):
    settings.APTIX_PUBLIC_LINKS = False
    client.force_login(alice)
    menu = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert 'name="kind" value="team"' in menu and 'value="public"' not in menu
    response = client.post(reverse("share-link-create", args=[session.id]), {"kind": "public", "days": "7"})
    assert response.status_code == 303 and not ShareLink.objects.exists()
    assert ERROR_PUBLIC_OFF in client.get(response["Location"]).content.decode()


def test_a_public_link_opens_signed_out_without_tool_results_unless_ticked(client, alice, team_a, session, settings):
    settings.APTIX_PUBLIC_LINKS = True
    ModeHistory.objects.create(  # alice changed the mode by hand: the timeline shows it, without her name
        session=session, previous_mode="general", new_mode="data-analysis", team=team_a, user=alice, source="user"
    )
    client.force_login(alice)
    assert 'value="public"' in client.get(reverse("session-detail", args=[session.id])).content.decode()
    path, link = make_link(client, session, kind="public")
    assert link.kind == "public"
    visitor = Client()
    page = visitor.get(path)
    html = page.content.decode()
    assert page.status_code == 200 and ANSWER in html and page["X-Robots-Tag"] == "noindex, nofollow"
    assert page["Referrer-Policy"] == "no-referrer" and "no-store" in page["Cache-Control"]
    assert "<strong>general</strong> → <strong>data-analysis</strong>" in html
    assert "secret-ledger-total" not in html and "sql__run_query" not in html and "ledger.csv" not in html
    assert "alice" not in html and 'id="sidebar"' not in html and "Log out" not in html
    settings.APTIX_PUBLIC_LINKS = False  # turned off: even a link made while it was on is refused
    refused = visitor.get(path)
    assert refused.status_code == 404 and ANSWER not in refused.content.decode()


def test_a_public_link_shows_tool_results_and_files_when_ticked(client, alice, session, settings):
    settings.APTIX_PUBLIC_LINKS = True
    client.force_login(alice)
    path, link = make_link(client, session, kind="public", include_tools="on", include_files="on")
    assert (link.include_tools, link.include_files) == (True, True)
    html = Client().get(path).content.decode()
    assert "sql__run_query" in html and "secret-ledger-total" in html and "ledger.csv" in html


@pytest.mark.parametrize("ending", ["revoked", "expired", "deleted"])
def test_a_link_that_ended_says_so_and_shows_nothing(client, alice, bob, session, ending):
    client.force_login(alice)
    path, link = make_link(client, session, days="1")
    if ending == "revoked":
        client.post(reverse("share-link-revoke", args=[link.id]))
    elif ending == "expired":
        ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    else:
        session_delete(session=session)
    client.force_login(bob)
    gone = client.get(path)
    html = gone.content.decode()
    said = {"revoked": ERROR_REVOKED, "expired": ERROR_EXPIRED, "deleted": ERROR_DELETED}[ending]
    assert gone.status_code == 410 and said in html
    assert ANSWER not in html and "Quarterly numbers" not in html and "How did Q3 go?" not in html
    client.force_login(alice)
    assert 'id="no-links"' in client.get(reverse("settings-shared")).content.decode()  # no longer listed


def test_links_are_revoked_from_settings_or_the_session_menu_by_their_author_only(client, alice, bob, session):
    client.force_login(alice)
    _, first = make_link(client, session)
    menu = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert reverse("share-link-revoke", args=[first.id]) in menu and "opened 0 times" in menu
    client.force_login(bob)
    assert client.post(reverse("share-link-revoke", args=[first.id])).status_code == 404
    first.refresh_from_db()
    assert first.revoked_at is None
    client.force_login(alice)
    back = client.post(reverse("share-link-revoke", args=[first.id]), {"back": "session"})
    assert back.status_code == 303 and back["Location"] == reverse("session-detail", args=[session.id])
    first.refresh_from_db()
    assert first.revoked_at is not None
    assert client.post(reverse("share-link-revoke", args=[first.id])).status_code == 404  # once


def test_only_the_author_makes_links(client, alice, bob, carol, session):
    session_share(session=session, user=alice, shared=True)
    create = reverse("share-link-create", args=[session.id])
    client.force_login(bob)  # a reader of the shared session
    assert client.post(create, {"kind": "team", "days": "7"}).status_code == 403
    assert 'id="share-link-form"' not in client.get(reverse("session-detail", args=[session.id])).content.decode()
    client.force_login(carol)
    assert client.post(create, {"kind": "team", "days": "7"}).status_code == 404
    assert not ShareLink.objects.exists()


def test_a_duration_not_offered_is_refused(client, alice, session):
    client.force_login(alice)
    response = client.post(reverse("share-link-create", args=[session.id]), {"kind": "team", "days": "365"})
    assert response.status_code == 303 and not ShareLink.objects.exists()
    assert "No link was made" in client.get(response["Location"]).content.decode()
    assert ERROR_DAYS == "A link lasts 1, 7 or 30 days."


def test_opening_links_is_rate_limited_per_address(client, settings):
    settings.APTIX_RATE_SHARE_LINKS = "2/m"
    path = reverse("share-link", args=["guess"])
    assert [client.get(path).status_code for _ in range(2)] == [404, 404]
    limited = client.get(path)
    assert limited.status_code == 429 and int(limited["Retry-After"]) > 0
    assert "Too many requests to share links" in limited.content.decode()


def test_making_and_revoking_are_logged(client, alice, session, caplog):
    client.force_login(alice)
    with caplog.at_level(logging.INFO, logger="aptix.sessions"):
        _, link = make_link(client, session)
        client.post(reverse("share-link-revoke", args=[link.id]))
    events = [(r.event, r.link_id, r.user_id) for r in caplog.records if getattr(r, "event", "").startswith("share_")]
    assert events == [("share_link.created", link.id, alice.pk), ("share_link.revoked", link.id, alice.pk)]
