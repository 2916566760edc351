"""Sharing on the JSON API: `POST /api/v1/conversations/<id>/share` (its author only), the transcript
`GET /api/v1/conversations/<id>` (its author, and its team while shared), `GET
/api/v1/conversations?shared=true`; a reader's sends, approvals, cancels, resends and uploads answer
403 with the reason, another team's member 404, in the API's error shape."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agents.models import ShareEvent, ToolApproval, Turn
from agents.sessions import ERROR_READ_ONLY, session_create
from agents.sharing.services import session_share
from aptix.tokens import api_token_create
from tests.helpers.turns import ended_turn

pytestmark = pytest.mark.django_db


def _auth(user) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {api_token_create(user=user)[1]}"}


@pytest.fixture
def session(team_a, bob):
    session = session_create(team=team_a, user=bob, title="Quarterly numbers")
    ended_turn(session, status="completed", message="How did Q3 go?", answer="Up 4%.")
    return session


def _post(client, url: str, body: dict, user) -> tuple[int, dict]:
    response = client.post(url, json.dumps(body), content_type="application/json", **_auth(user))
    return response.status_code, response.json()


def test_the_author_shares_and_stops_sharing(client, session, bob, alice, carol):
    url = reverse("api-share", args=[session.id])
    assert _post(client, url, {"shared": True}, bob) == (200, {"conversationId": session.id, "shared": True})
    status, body = _post(client, url, {"shared": False}, bob)
    assert (status, body["shared"]) == (200, False)
    assert _post(client, url, {"shared": "yes"}, bob) == (
        400,
        {"error": {"message": "'shared' must be true or false.", "field": "shared"}},
    )
    assert _post(client, url, {"shared": True}, carol)[0] == 404
    assert list(ShareEvent.objects.order_by("at").values_list("action", "actor__username")) == [
        ("share", "bob"),
        ("unshare", "bob"),
    ]


def test_a_reader_may_not_share_or_unshare(client, session, bob, alice):
    session_share(session=session, user=bob, shared=True)
    status, body = _post(client, reverse("api-share", args=[session.id]), {"shared": False}, alice)
    assert (status, body) == (403, {"error": {"message": ERROR_READ_ONLY, "field": "conversationId"}})
    session.refresh_from_db()
    assert session.shared_at is not None


def test_the_transcript_while_shared_and_then_404(client, session, bob, alice, carol):
    url = reverse("api-conversation", args=[session.id])
    own = client.get(url, **_auth(bob)).json()
    assert (own["shared"], own["readOnly"], own["transcript"]["turns"][0]["answer"]) == (False, False, "Up 4%.")
    assert client.get(url, **_auth(alice)).status_code == 404  # not shared yet
    session_share(session=session, user=bob, shared=True)
    read = client.get(url, **_auth(alice)).json()
    assert (read["author"], read["shared"], read["readOnly"]) == ("bob", True, True)
    assert read["transcript"]["turns"][0]["message"] == "How did Q3 go?"
    assert client.get(url, **_auth(carol)).json() == {
        "error": {"message": "No conversation with this id.", "field": "conversationId"}
    }
    session_share(session=session, user=bob, shared=False)
    assert client.get(url, **_auth(alice)).status_code == 404


def test_the_list_of_conversations_shared_with_me(client, session, bob, alice, carol):
    url = reverse("api-conversations")
    assert client.get(url + "?shared=true", **_auth(alice)).json() == {"conversations": []}
    session_share(session=session, user=bob, shared=True)
    listed = client.get(url + "?shared=true", **_auth(alice)).json()["conversations"]
    assert [(c["conversationId"], c["author"], c["title"], c["readOnly"]) for c in listed] == [
        (session.id, "bob", "Quarterly numbers", True)
    ]
    assert client.get(url + "?shared=true", **_auth(carol)).json() == {"conversations": []}
    assert client.get(url + "?shared=true", **_auth(bob)).json() == {"conversations": []}  # his own: not "with me"
    own = client.get(url, **_auth(bob)).json()["conversations"]
    assert [(c["conversationId"], c["shared"]) for c in own] == [(session.id, True)]
    assert client.get(url + "?shared=maybe", **_auth(alice)).status_code == 400


def test_a_reader_cannot_send_approve_cancel_resend_or_upload(client, session, bob, alice, carol):
    waiting = Turn.objects.create(
        session=session, index=2, user_message="Add a note", mode=session.mode, status="awaiting_approval"
    )
    ToolApproval.objects.create(
        session=session, team=session.team, turn=waiting, tool_call_id="call_1", tool="notes__add_note", kind="tool"
    )
    session_share(session=session, user=bob, shared=True)
    execute = reverse("api-agent-execute")
    refused = {"error": {"message": ERROR_READ_ONLY, "field": "conversationId"}}
    assert _post(client, execute, {"conversationId": session.id, "message": "Hi"}, alice) == (403, refused)
    approve = {"conversationId": session.id, "approvals": [{"toolCallId": "call_1", "decision": "approve"}]}
    assert _post(client, execute, approve, alice) == (403, refused)
    turn_refused = {"error": {"message": ERROR_READ_ONLY, "field": "turnId"}}
    assert _post(client, reverse("api-turn-cancel", args=[waiting.id]), {}, alice) == (403, turn_refused)
    resend = reverse("api-turn-resend", args=[waiting.id])
    assert _post(client, resend, {"kind": "retry"}, alice) == (403, turn_refused)
    upload = client.post(
        reverse("api-files"),
        {"conversationId": session.id, "file": SimpleUploadedFile("notes.txt", b"notes", content_type="text/plain")},
        **_auth(alice),
    )
    assert (upload.status_code, upload.json()) == (403, refused)
    # Another team's member: 404, as for any session not theirs.
    assert _post(client, execute, {"conversationId": session.id, "message": "Hi"}, carol)[0] == 404
    assert _post(client, reverse("api-turn-cancel", args=[waiting.id]), {}, carol)[0] == 404
    assert session.turns.count() == 2
    assert ToolApproval.objects.get().decision == ""
    waiting.refresh_from_db()
    assert waiting.cancel_requested is False
