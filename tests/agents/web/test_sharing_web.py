"""A session shared with the team, on the site: its author's menu shares and stops sharing; a teammate
reads it (timeline, pending approvals without buttons, files, documents) and every route that would
change it answers 403 with the reason, walked from the URLconf so a new route is covered the day it is
added; another team's member gets 404 everywhere; "Continue as my copy" opens the reader's own copy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from agents.documents.services import document_write
from agents.models import AgentSession, DocumentVersion, ShareEvent, ToolApproval, Turn
from agents.sessions import ERROR_READ_ONLY, session_create
from agents.sharing.services import session_share
from files.services import file_upload
from tests.helpers.turns import add_events, ended_turn

pytestmark = pytest.mark.django_db

FORM = {
    "message": "Do it again",
    "kind": "edit",
    "title": "Renamed",
    "mode": "data-analysis",
    "execution": "ask",
    "model": "offline",
    "decision": "allow-once",
    "call": "call_1",
    "pinned": "1",
    "archived": "1",
    "shared": "0",
    "enabled": "0",
    "tool": "notes__add_note",
    "content": "# Changed",
}
READS = {"session-detail", "session-history", "turn-version", "turn-answer", "session-export", "document-panel"}
READS |= {"document-download", "media", "session-copy", "mcp-app"}  # mcp-app: the app, without its calls


def _routes(resolver: URLResolver | None = None) -> Iterator[URLPattern]:
    """The site's routes that name a session or a turn (the API's: test_sharing_api.py)."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            if str(entry.pattern) != "api/v1/":
                yield from _routes(entry)
        elif entry.name and {"session_id", "turn_id"} & set(entry.pattern.converters):
            yield entry


@pytest.fixture
def shared(team_a, bob, settings, tmp_path):
    """Bob's shared session: a finished turn, a turn waiting for his approval, a document and a file."""
    settings.MEDIA_ROOT = tmp_path
    session = session_create(team=team_a, user=bob, title="Quarterly numbers", execution="agent")
    ended_turn(session, status="completed", message="How did Q3 go?", answer="Revenue was up **4%**.")
    waiting = Turn.objects.create(
        session=session, index=2, user_message="Add a note", mode=session.mode, status="awaiting_approval"
    )
    call = {"id": "call_1", "name": "notes__add_note", "kind": "mcp", "arguments": "{}", "reason": ""}
    add_events(waiting, ("turn.started", {}), ("approval.requested", {"calls": [call]}))
    ToolApproval.objects.create(
        session=session, team=team_a, turn=waiting, tool_call_id="call_1", tool="notes__add_note", kind="tool"
    )
    document_write(session_id=session.id, title="Q3 report", content="# Q3\n\nUp 4%.")
    upload = SimpleUploadedFile("notes.txt", b"plain notes", content_type="text/plain")
    stored = file_upload(owner=bob, uploaded=upload, session=session)
    session_share(session=session, user=bob, shared=True)
    return session, waiting, stored


def _snapshot(session: AgentSession) -> tuple:
    session.refresh_from_db()
    turns = list(session.turns.order_by("index").values_list("index", "status", "cancel_requested"))
    decisions = list(ToolApproval.objects.filter(session=session).values_list("decision", flat=True))
    return (
        session.title,
        session.mode,
        session.execution,
        session.model,
        session.tool_toggles,
        session.pinned_at,
        session.archived_at,
        session.deleted_at,
        session.shared_at,
        turns,
        decisions,
        DocumentVersion.objects.filter(document__session=session).count(),
    )


def _url(pattern: URLPattern, session: AgentSession, turn: Turn) -> str:
    values = {
        "session_id": session.id,
        "turn_id": turn.id,
        "fmt": "md",
        "number": "1",
        "document_id": session.documents.get().id,
    }
    return reverse(pattern.name, kwargs={k: values[k] for k in pattern.pattern.converters})


def test_a_reader_gets_403_on_every_write_and_changes_nothing(client, shared, alice):
    session, waiting, _ = shared
    client.force_login(alice)
    before = _snapshot(session)
    answered: dict[str, set[int]] = {}
    for pattern in _routes():
        if pattern.name in READS:
            continue
        url = _url(pattern, session, waiting)
        for response in (client.get(url), client.post(url, FORM)):
            answered.setdefault(pattern.name, set()).add(response.status_code)
    wrong = {name: codes for name, codes in answered.items() if not codes <= {403, 405}}
    assert wrong == {}
    assert {403} <= answered["turn-new"] and {403} <= answered["approval-decide"] and {403} <= answered["session-tools"]
    refused = client.post(reverse("turn-new", args=[session.id]), {"message": "Hi"})
    assert ERROR_READ_ONLY in refused.content.decode()
    assert _snapshot(session) == before


def test_a_reader_reads_the_page_without_composer_or_buttons(client, shared, alice):
    session, _, stored = shared
    client.force_login(alice)
    page = client.get(reverse("session-detail", args=[session.id]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Revenue was up <strong>4%</strong>" in html and "notes__add_note" in html  # the turns, the pending card
    assert "Continue as my copy" in html and "read-only" in html
    for control in ('id="message"', "Allow once", "approval-actions", 'class="stop"', "segmented", "tools-panel"):
        assert control not in html, control
    assert "Waiting for the author's decision." in html
    assert reverse("file-download", args=[stored.id]) in html  # files: metadata and download, no Delete
    assert reverse("file-delete", args=[stored.id]) not in html
    assert "Q3 report" in html and "document-edit" not in html
    # The same page for its author has all of them.
    client.force_login(session.user)
    own = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert "Allow once" in own and 'id="message"' in own and "Stop sharing" in own


def test_a_reader_downloads_files_and_documents_of_the_shared_session(client, shared, alice, carol):
    session, _, stored = shared
    document = session.documents.get()
    client.force_login(alice)
    response = client.get(reverse("file-download", args=[stored.id]))
    assert response.status_code == 200 and b"".join(response.streaming_content) == b"plain notes"
    download = client.get(reverse("document-download", args=[session.id, document.id, "md"]))
    assert download.status_code == 200 and b"Up 4%." in download.content
    assert client.post(reverse("file-delete", args=[stored.id])).status_code == 404  # never hers to delete
    client.force_login(carol)
    assert client.get(reverse("file-download", args=[stored.id])).status_code == 404
    client.force_login(alice)
    session_share(session=session, user=session.user, shared=False)
    assert client.get(reverse("file-download", args=[stored.id])).status_code == 404


def test_another_teams_member_gets_404_everywhere(client, shared, carol):
    session, waiting, _ = shared
    client.force_login(carol)
    for pattern in _routes():
        url = _url(pattern, session, waiting)
        for response in (client.get(url), client.post(url, FORM)):
            assert response.status_code in (404, 405), (pattern.name, response.status_code)
    assert "Quarterly numbers" not in client.get(reverse("home")).content.decode()


def test_the_sidebar_lists_shared_sessions_with_author_until_unshared(client, shared, alice, bob):
    session, _, _ = shared
    client.force_login(alice)
    home = client.get(reverse("home")).content.decode()
    assert "Shared with me" in home and "Quarterly numbers" in home and "bob" in home
    session_share(session=session, user=bob, shared=False)
    assert "Quarterly numbers" not in client.get(reverse("home")).content.decode()
    assert client.get(reverse("session-detail", args=[session.id])).status_code == 404


def test_the_authors_menu_shares_and_stops_sharing(client, team_a, bob, alice):
    session = session_create(team=team_a, user=bob, title="Plans")
    client.force_login(bob)
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert "Share with Team A" in page
    assert client.post(reverse("session-share", args=[session.id]), {"shared": "1"}).status_code == 303
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert "Stop sharing" in page and "Shared with Team A" in page
    assert ">shared</span>" in page  # marked in the author's own sidebar
    client.force_login(alice)
    assert client.post(reverse("session-share", args=[session.id]), {"shared": "0"}).status_code == 403
    client.force_login(bob)
    assert client.post(reverse("session-share", args=[session.id]), {"shared": "0"}).status_code == 303
    assert list(ShareEvent.objects.order_by("at").values_list("action", flat=True)) == ["share", "unshare"]


def test_continue_as_my_copy_opens_the_readers_own_session(client, shared, alice):
    session, _, _ = shared
    client.force_login(alice)
    response = client.post(reverse("session-copy", args=[session.id]))
    copy = AgentSession.objects.get(user=alice, copied_from=session)
    assert response.status_code == 303 and response["Location"] == reverse("session-detail", args=[copy.id])
    page = client.get(response["Location"]).content.decode()
    assert 'id="message"' in page and "Revenue was up" in page and "copied from" in page
