"""Documents out of Aptix: Markdown and DOCX downloads (the DOCX opens with python-docx and holds the
headings), the JSON API with its versions, and the session export; other people's documents are a 404."""

from __future__ import annotations

import io
import json

import docx
import pytest
from django.urls import reverse

from agents.documents.services import document_write
from agents.sessions import session_create
from aptix.tokens import api_token_create

pytestmark = pytest.mark.django_db

DDR = (
    "# TUL-008 API versioning\n\n## Status\n\nDraft\n\n## Contract\n\n- Clients **MUST** send a version\n"
    "1. first\n\n```python\nprint('x')\n```\n\n### Testing Requirements\n\nTODO\n"
)


@pytest.fixture
def document(team_a, alice):
    session = session_create(team=team_a, user=alice, mode="ddr-authoring")
    v1 = document_write(session_id=session.id, title="TUL-008 API versioning", content="# TUL-008\n\nDraft")
    return document_write(
        session_id=session.id,
        title="TUL-008 API versioning",
        content=DDR,
        document_id=v1.document_id,
        author="user",
        user=alice,
    )


@pytest.fixture
def token(alice):
    return api_token_create(user=alice, name="ci")[1]


def test_the_docx_download_opens_and_holds_the_headings(client, alice, password, document):
    client.login(username="alice", password=password)
    url = reverse("document-download", args=[document.document.session_id, document.document_id, "docx"])
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="tul-008-api-versioning-v2.docx"'
    word = docx.Document(io.BytesIO(response.content))
    headings = [(p.style.name, p.text) for p in word.paragraphs if p.style.name.startswith("Heading")]
    assert headings == [
        ("Heading 1", "TUL-008 API versioning"),
        ("Heading 2", "Status"),
        ("Heading 2", "Contract"),
        ("Heading 3", "Testing Requirements"),
    ]
    texts = [p.text for p in word.paragraphs]
    assert "Clients MUST send a version" in texts and "print('x')" in texts
    assert word.core_properties.title == "TUL-008 API versioning"


def test_the_markdown_download_is_the_text_of_the_version_asked_for(client, alice, password, document):
    client.login(username="alice", password=password)
    url = reverse("document-download", args=[document.document.session_id, document.document_id, "md"])
    current = client.get(url)
    assert current.content.decode() == DDR and current["Content-Type"] == "text/markdown; charset=utf-8"
    assert client.get(url, {"version": 1}).content.decode() == "# TUL-008\n\nDraft"
    assert client.get(url, {"version": 3}).status_code == 404
    assert client.get(url, {"version": "0"}).status_code == 400


def test_the_api_lists_and_returns_documents_with_their_versions(client, token, document):
    headers = {"Authorization": f"Bearer {token}"}
    session_id, document_id = document.document.session_id, document.document_id
    listed = client.get(f"/api/v1/conversations/{session_id}/documents", headers=headers).json()
    assert listed["conversationId"] == session_id
    assert [(d["documentId"], d["title"], d["version"]) for d in listed["documents"]] == [
        (document_id, "TUL-008 API versioning", 2)
    ]
    url = f"/api/v1/conversations/{session_id}/documents/{document_id}"
    body = client.get(url, headers=headers).json()
    assert (body["documentId"], body["title"], body["version"], body["content"]) == (
        document_id,
        "TUL-008 API versioning",
        2,
        DDR,
    )
    assert [(v["version"], v["author"], v["user"]) for v in body["versions"]] == [
        (1, "agent", None),
        (2, "user", "alice"),
    ]
    assert client.get(url, {"version": 1}, headers=headers).json()["content"] == "# TUL-008\n\nDraft"
    markdown = client.get(url, {"format": "md"}, headers=headers)
    assert markdown.content.decode() == DDR and "attachment" in markdown["Content-Disposition"]
    word = client.get(url, {"format": "docx", "version": 2}, headers=headers)
    assert docx.Document(io.BytesIO(word.content)).paragraphs[0].text == "TUL-008 API versioning"
    assert client.get(url, {"format": "pdf"}, headers=headers).json()["error"]["field"] == "format"
    assert client.get(url, {"version": "x"}, headers=headers).status_code == 400
    assert client.get(url, {"version": "9"}, headers=headers).status_code == 404
    assert client.get(url).status_code == 401


def test_someone_elses_document_is_a_404_on_the_api(client, team_a, bob, document):
    token = api_token_create(user=bob)[1]
    headers = {"Authorization": f"Bearer {token}"}
    session_id, document_id = document.document.session_id, document.document_id
    assert client.get(f"/api/v1/conversations/{session_id}/documents", headers=headers).status_code == 404
    for params in ({}, {"format": "md"}, {"format": "docx"}):
        url = f"/api/v1/conversations/{session_id}/documents/{document_id}"
        assert client.get(url, params, headers=headers).status_code == 404
    own = session_create(team=team_a, user=bob)
    url = f"/api/v1/conversations/{own.id}/documents/{document_id}"
    assert client.get(url, headers=headers).status_code == 404  # their own conversation, not that document
    assert b"TUL-008" not in client.get(url, {"format": "md"}, headers=headers).content


def test_the_session_export_holds_the_documents(client, alice, password, document):
    client.login(username="alice", password=password)
    session_id = document.document.session_id
    data = json.loads(client.get(reverse("session-export", args=[session_id, "json"])).content)
    [exported] = data["documents"]
    assert (exported["title"], exported["version"], exported["content"]) == ("TUL-008 API versioning", 2, DDR)
    assert [v["author"] for v in exported["versions"]] == ["agent", "user"]
    markdown = client.get(reverse("session-export", args=[session_id, "md"])).content.decode()
    assert "## Document: TUL-008 API versioning (version 2)" in markdown and "````markdown\n# TUL-008 API" in markdown


def test_a_document_with_control_characters_downloads_as_docx(client, alice, password, team_a, token):
    """XML cannot hold U+0001-U+001F but tab and newlines: python-docx refused them and the download
    answered 500; they are left out of the DOCX, on the page's download and the API's alike."""
    session = session_create(team=team_a, user=alice, mode="ddr-authoring")
    text = "".join(chr(c) for c in range(1, 32))
    written = document_write(session_id=session.id, title="Bad\x01title\x1f", content=f"# Head\x02ing\n\nA{text}B\n")
    client.login(username="alice", password=password)
    page = client.get(reverse("document-download", args=[session.id, written.document_id, "docx"]))
    api = client.get(
        f"/api/v1/conversations/{session.id}/documents/{written.document_id}",
        {"format": "docx"},
        headers={"Authorization": f"Bearer {token}"},
    )
    for response in (page, api):
        assert response.status_code == 200
        word = docx.Document(io.BytesIO(response.content))
        assert [p.text for p in word.paragraphs] == ["Heading", "A", "B"]  # its newline and return split the line
        assert word.core_properties.title == "Badtitle"
