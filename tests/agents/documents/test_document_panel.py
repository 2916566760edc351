"""The document panel beside the timeline: the current version rendered as answers are (sanitised),
its versions with who and when, a diff, the user's edit as a new version, the timeline's card, the
live stream redrawing the panel, and other people's documents a 404 everywhere."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.urls import reverse

from agents.documents.render import diff_lines
from agents.documents.services import document_write
from agents.models import DocumentVersion, TurnEvent
from agents.sessions import session_create
from agents.turns import turn_start
from agents.web.live import LiveRenderer
from agents.web.timeline import render_turn

pytestmark = pytest.mark.django_db

HOSTILE = (
    "# Plan\n\n<script>document.title='owned'</script>\n\n[click](javascript:alert(1)) "
    '<img src=x onerror="alert(2)"> <a href="javascript:alert(3)">raw</a>\n'
)


@pytest.fixture
def session(team_a, alice):
    return session_create(team=team_a, user=alice, mode="ddr-authoring")


@pytest.fixture
def logged_in(client, alice, password):
    client.login(username="alice", password=password)
    return client


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def elements(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every element of `html` with its attributes, as a browser's parser sees them."""
    parser = _Elements()
    parser.feed(html)
    return parser.found


def panel(client, session, **params) -> str:
    response = client.get(reverse("document-panel", args=[session.id]), params)
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_shows_the_latest_document_with_its_versions_and_who_made_each(logged_in, session, alice):
    v1 = document_write(session_id=session.id, title="TUL-008", content="# TUL-008\n\n## Status\n\nDraft")
    document_write(
        session_id=session.id,
        title="TUL-008",
        content="# TUL-008\n\n## Status\n\nProposed",
        document_id=v1.document_id,
        author="user",
        user=alice,
    )
    html = logged_in.get(reverse("session-detail", args=[session.id])).content.decode()
    assert 'id="doc-panel"' in html and "<h2>Status</h2>" in html and "<p>Proposed</p>" in html
    assert "Version 2 of 2 · edited by alice" in html
    assert "Version 1</a>" in html and "agent ·" in html  # the version list: who made each
    assert 'id="docs-toggle"' in html and 'id="docs-toggle" aria-controls="doc-panel" aria-expanded="true">' in html

    earlier = panel(logged_in, session, doc=v1.document_id, version=1)
    assert "<p>Draft</p>" in earlier and "Version 1 of 2 · written by the agent" in earlier
    assert earlier.count('<time datetime="') == 3  # when: on the shown version's line and each version's entry
    assert "document-edit" not in earlier and ">Edit<" not in earlier  # only the current version is edited


def test_a_session_without_documents_has_a_hidden_panel(logged_in, session):
    html = logged_in.get(reverse("session-detail", args=[session.id])).content.decode()
    assert '<aside id="doc-panel" class="doc-panel" aria-labelledby="doc-panel-title" hidden>' in html
    assert 'id="docs-toggle" aria-controls="doc-panel" aria-expanded="true" hidden>' in html


def test_the_diff_between_two_versions_marks_added_and_removed_lines_escaped(logged_in, session):
    v1 = document_write(session_id=session.id, title="Doc", content="one\ntwo\nthree")
    document_write(session_id=session.id, title="Doc", content="one\n<b>2</b>\nthree", document_id=v1.document_id)
    assert [(line.kind, line.text) for line in diff_lines("one\ntwo\nthree", "one\n2\nthree")] == [
        ("hunk", "@@ -1,3 +1,3 @@"),
        ("ctx", "one"),
        ("del", "two"),
        ("add", "2"),
        ("ctx", "three"),
    ]
    html = panel(logged_in, session, doc=v1.document_id, **{"from": 1, "to": 2})
    assert "Changes from version 1 to 2" in html
    assert "<del>- two</del>" in html and "<ins>+ &lt;b&gt;2&lt;/b&gt;</ins>" in html
    assert "The two versions are the same." in panel(logged_in, session, doc=v1.document_id, **{"from": 2, "to": 2})


def test_the_users_edit_is_a_new_version_marked_as_theirs_and_a_stale_one_is_refused(logged_in, session, alice):
    v1 = document_write(session_id=session.id, title="Doc", content="agent text")
    url = reverse("document-edit", args=[session.id, v1.document_id])
    editor = logged_in.get(url).content.decode()
    assert '<textarea id="doc-content-input" name="content"' in editor and "agent text</textarea>" in editor
    assert 'name="base" value="1"' in editor

    saved = logged_in.post(url, {"title": "Doc", "content": "my text\r\nline 2", "base": "1"})
    assert saved.status_code == 200 and "Version 2 of 2 · edited by alice" in saved.content.decode()
    v2 = DocumentVersion.objects.get(document_id=v1.document_id, number=2)
    assert (v2.content, v2.author, v2.user, v2.turn) == ("my text\nline 2", "user", alice, None)

    stale = logged_in.post(url, {"title": "Doc", "content": "based on v1", "base": "1"})
    assert stale.status_code == 422 and stale["HX-Retarget"] == "#doc-body"
    body = stale.content.decode()
    assert "at version 2 now, you started from 1" in body and "based on v1</textarea>" in body
    assert DocumentVersion.objects.filter(document_id=v1.document_id).count() == 2


def test_a_hostile_document_renders_inert(logged_in, session):
    document_write(session_id=session.id, title="<script>x</script>", content=HOSTILE)
    html = panel(logged_in, session)
    tags = elements(html)
    assert "script" not in {tag for tag, _ in tags} and "img" not in {tag for tag, _ in tags}
    attributes = [(name, value or "") for _, attrs in tags for name, value in attrs]
    assert not [a for a in attributes if a[0].startswith("on") or a[1].strip().lower().startswith("javascript:")]
    assert "&lt;script&gt;x&lt;/script&gt;" in html  # the title, escaped


def test_someone_elses_document_is_a_404_for_the_panel_the_editor_and_the_downloads(client, team_a, bob, password):
    theirs = session_create(team=team_a, user=bob)
    version = document_write(session_id=theirs.id, title="Secret", content="secret")
    mine = session_create(team=team_a, user=bob)
    client.login(username="bob", password=password)
    assert client.get(reverse("document-panel", args=[mine.id]), {"doc": version.document_id}).status_code == 404
    for fmt in ("md", "docx"):
        url = reverse("document-download", args=[mine.id, version.document_id, fmt])
        assert client.get(url).status_code == 404
    edit = reverse("document-edit", args=[mine.id, version.document_id])
    assert client.get(edit).status_code == 404
    assert client.post(edit, {"content": "x", "base": "1"}).status_code == 404
    client.logout()
    session_create(team=team_a, user=bob)
    # Another user reaching bob's session by its id: the same 404.
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("eve", password=password)
    client.login(username="eve", password=password)
    assert client.get(reverse("document-panel", args=[theirs.id])).status_code == 404
    assert client.get(reverse("document-download", args=[theirs.id, version.document_id, "md"])).status_code == 404
    assert (
        client.post(reverse("document-edit", args=[theirs.id, version.document_id]), {"content": "x"}).status_code
        == 404
    )
    assert DocumentVersion.objects.filter(document_id=version.document_id).count() == 1


def test_the_timeline_card_opens_the_panel_at_its_version_and_the_stream_redraws_the_panel(session):
    version = document_write(session_id=session.id, title="TUL-008", content="# TUL-008\n\nDraft")
    turn = turn_start(session=session, text="Draft a DDR")
    payload = {"documentId": version.document_id, "title": "TUL-008", "version": 1, "author": "agent"}
    event = TurnEvent.objects.create(turn=turn, seq=1, type="document.updated", payload=payload)
    page = render_turn(turn, [event])
    opens = f"/sessions/{session.id}/documents/?doc={version.document_id}&amp;version=1"
    assert "Document <strong>TUL-008</strong> v1 updated" in page and f'hx-get="{opens}"' in page

    fragment = LiveRenderer(session).render(turn, "document.updated", payload, 1)
    assert "Document <strong>TUL-008</strong> v1 updated" in fragment
    assert '<aside id="doc-panel" class="doc-panel" aria-labelledby="doc-panel-title" hx-swap-oob="true"' in fragment
    assert "<p>Draft</p>" in fragment
