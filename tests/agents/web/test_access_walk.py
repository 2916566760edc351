"""Every route that names a session or a turn goes through the one access check (session_list: the
user's own session, in a team they still belong to, not deleted). Walked from the URLconf, so a new
route is covered the day it is added: a user who left the team, or whose session was deleted, gets a
404 (or 405 for a method the route does not take) everywhere, and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from agents.documents.services import document_write
from agents.models import AgentSession, Document, DocumentVersion, ToolApproval, Turn
from agents.sessions import session_create
from aptix.models import Membership
from aptix.tokens import api_token_create
from tests.helpers.turns import ended_turn

pytestmark = pytest.mark.django_db

FORM = {
    "message": "Do it again",
    "kind": "edit",
    "title": "Renamed",
    "mode": "data-analysis",
    "execution": "agent",
    "model": "offline",
    "decision": "approve",
    "scope": "once",
    "pinned": "true",
    "tool": "notes__add_note",
}


def _routes(resolver: URLResolver | None = None, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from _routes(entry, prefix + str(entry.pattern))
        elif entry.name:
            yield prefix + str(entry.pattern), entry


def session_routes() -> list[URLPattern]:
    """Every named route of the site whose URL names a session, a conversation (the API's word for it)
    or a turn (the media route names the session in its path)."""
    names = {"session_id", "turn_id", "path", "conversation_id"}
    found = [p for _, p in _routes() if names & set(p.pattern.converters)]
    assert len(found) >= 20  # the walk found the app's routes (a broken walk must not pass empty)
    return found


def _kwargs(pattern: URLPattern, session: AgentSession, turn: Turn) -> dict[str, str]:
    values = {
        "session_id": session.id,
        "conversation_id": session.id,
        "turn_id": turn.id,
        "fmt": "json",
        "path": _image_path(session),
        "number": "1",
        "document_id": _document_id(session),
    }
    return {name: values[name] for name in pattern.pattern.converters}


def _document_id(session: AgentSession) -> str:
    """The session's document (bobs_session writes one; a deleted session's is purged: any id then)."""
    document = Document.objects.filter(session=session).first()
    return document.id if document else "d" * 32


def _image_path(session: AgentSession) -> str:
    return f"images/{session.id}/{'c' * 32}.png"


@pytest.fixture(autouse=True)
def _an_image_of_the_session(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


@pytest.fixture
def bobs_session(bob, settings) -> tuple[AgentSession, Turn, Turn, ToolApproval]:
    session = session_create(team=bob.memberships.get().team, user=bob, execution="agent")
    done = ended_turn(session, status=Turn.Status.COMPLETED, index=1, answer="Done.")
    waiting = Turn.objects.create(
        session=session, index=2, user_message="Add a note", mode=session.mode, status=Turn.Status.AWAITING_APPROVAL
    )
    approval = ToolApproval.objects.create(
        session=session,
        team=session.team,
        turn=waiting,
        tool_call_id="call_1",
        tool="notes__add_note",
        kind=ToolApproval.Kind.TOOL,
        arguments="{}",
    )
    document_write(session_id=session.id, title="Bob's draft", content="# Draft")  # the panel's, API's, downloads'
    image = settings.MEDIA_ROOT / _image_path(session)
    image.parent.mkdir(parents=True)
    image.write_bytes(b"\x89PNG\r\n\x1a\n")  # the session's image: its owner gets it, nobody else
    return session, done, waiting, approval


def _snapshot(session: AgentSession) -> tuple:
    session.refresh_from_db()
    turns = list(
        Turn.objects.filter(session=session).order_by("index").values_list("index", "status", "cancel_requested")
    )
    approvals = list(ToolApproval.objects.filter(turn__session=session).values_list("decision", "decided_at"))
    versions = DocumentVersion.objects.filter(document__session=session).count()
    return (
        session.title,
        session.mode,
        session.execution,
        session.deleted_at,
        session.pinned_at,
        turns,
        approvals,
        versions,
    )


def _walk(client: Client, token: str, session: AgentSession, turns: list[Turn]) -> list[str]:
    """Each route with each method, as `bob`: what answered other than 404/405."""
    leaks = []
    for pattern in session_routes():
        for turn in turns:
            url = reverse(pattern.name, kwargs=_kwargs(pattern, session, turn))
            if url.startswith("/api/"):
                body = json.dumps({"kind": "edit", "message": "Do it again"})
                auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
                responses = [client.get(url, **auth), client.post(url, body, content_type="application/json", **auth)]
            else:
                responses = [client.get(url), client.post(url, FORM)]
            leaks += [
                f"{r.request['REQUEST_METHOD']} {url} → {r.status_code}"
                for r in responses
                if r.status_code not in (404, 405)
            ]
    execute = reverse("api-agent-execute")
    response = client.post(
        execute,
        json.dumps({"conversationId": session.id, "message": "hi"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    if response.status_code != 404:
        leaks.append(f"POST {execute} → {response.status_code}")
    return leaks


def test_a_user_who_left_the_team_reaches_nothing_of_their_sessions(client, bob, bobs_session):
    session, done, waiting, _ = bobs_session
    _, token = api_token_create(user=bob)
    Membership.objects.filter(user=bob).delete()
    client.force_login(bob)
    before = _snapshot(session)
    assert _walk(client, token, session, [done, waiting]) == []
    assert _snapshot(session) == before


def test_a_deleted_session_is_reached_by_no_route(client, bob, bobs_session):
    session, done, waiting, _ = bobs_session
    _, token = api_token_create(user=bob)
    AgentSession.objects.filter(pk=session.pk).update(deleted_at=timezone.now())
    client.force_login(bob)
    before = _snapshot(session)
    assert _walk(client, token, session, [done, waiting]) == []
    assert _snapshot(session) == before


def test_the_walk_reaches_the_session_while_the_user_may(client, bob, bobs_session):
    """The same walk as the owner with access: the routes answer, so the 404s above are the check's."""
    session, done, _, _ = bobs_session
    client.force_login(bob)
    assert client.get(reverse("session-detail", kwargs={"session_id": session.id})).status_code == 200
    url = reverse("turn-answer", kwargs={"session_id": session.id, "turn_id": done.id})
    assert client.get(url).status_code == 200
    assert client.get(reverse("media", kwargs={"path": _image_path(session)})).status_code == 200
