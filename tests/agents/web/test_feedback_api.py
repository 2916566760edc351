"""POST /api/v1/turns/<turnId>/feedback `{"rating": "up"|"down", "reason", "comment"}`: the rating of
an answer, by programs, through the page's service. The answer carries what the turn ran with; a bad
value is a 400 naming the field with nothing written; another team's turn a 404, a teammate's shared one
a 403 (read-only); after the next turn a 409."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from agents.feedback.services import ERROR_COMMENT, ERROR_NOT_LATEST, ERROR_RATING, ERROR_REASON
from agents.models import AgentSession, AnswerFeedback
from agents.sessions import ERROR_READ_ONLY
from agents.sharing.services import session_share
from aptix.tokens import api_token_create
from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db

pytestmark = [async_db, pytest.mark.usefixtures("no_limits")]


@pytest.fixture
def no_limits():
    with override_settings(APTIX_RATE_TURNS=None, APTIX_RATE_API=None, APTIX_RATE_BAD_TOKENS=None):
        yield


async def _token(user) -> str:
    return (await sync_to_async(api_token_create)(user=user, name="ci"))[1]


@pytest.fixture
async def token(alice):
    return await _token(alice)


async def call(method: str, url: str, token: str | None, body=None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    client = ServerLikeAsyncClient()
    if method == "GET":
        response = await client.get(url, headers=headers)
    else:
        raw = body if isinstance(body, bytes) else json.dumps(body)
        response = await client.post(url, data=raw, content_type="application/json", headers=headers)
    return response.status_code, json.loads(response.content)


async def execute(token: str, **body) -> dict:
    status, answer = await call("POST", "/api/v1/agent/execute", token, {"execution": "ask", **body})
    assert status == 200, answer
    return answer


def url(turn_id: str) -> str:
    return f"/api/v1/turns/{turn_id}/feedback"


async def test_a_rating_is_recorded_with_what_the_turn_ran_with_and_read_back(llm, model, token):
    model.reply("Paris.")
    turn = await execute(token, message="Capital of France?")
    rating = {"rating": "down", "reason": "wrong", "comment": "No."}
    status, body = await call("POST", url(turn["turnId"]), token, rating)
    assert status == 200, body
    version = (await AgentMode.objects.aget(key="general")).version  # the published version it ran with
    expected = {"turnId": turn["turnId"], "rating": "down", "reason": "wrong", "comment": "No."}
    assert {k: body[k] for k in expected} == expected
    assert (body["mode"], body["modeVersion"], body["model"], body["tools"]) == ("general", version, "scripted", [])

    status, changed = await call("POST", url(turn["turnId"]), token, {"rating": "up"})
    assert status == 200 and (changed["rating"], changed["reason"], changed["comment"]) == ("up", None, "")
    assert await AnswerFeedback.objects.acount() == 1
    status, read = await call("GET", url(turn["turnId"]), token)
    assert status == 200 and read["rating"] == "up"


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"rating": "sideways"}, "rating", ERROR_RATING),
        ({"reason": "wrong"}, "rating", ERROR_RATING),
        ({"rating": "down", "reason": "rude"}, "reason", ERROR_REASON),
        ({"rating": "down", "comment": "x" * 2001}, "comment", ERROR_COMMENT),
        ({"rating": "up", "stars": 5}, "stars", None),
    ],
)
async def test_a_bad_value_is_a_400_naming_the_field_with_nothing_written(llm, model, token, body, field, message):
    model.reply("Paris.")
    turn = await execute(token, message="Capital of France?")
    status, answer = await call("POST", url(turn["turnId"]), token, body)
    assert status == 400 and answer["error"]["field"] == field
    assert message is None or answer["error"]["message"] == message
    assert await AnswerFeedback.objects.acount() == 0


async def test_a_body_that_is_not_json_is_a_400(llm, model, token):
    model.reply("Paris.")
    turn = await execute(token, message="Capital of France?")
    status, answer = await call("POST", url(turn["turnId"]), token, b"rating=up")
    assert status == 400 and "JSON object" in answer["error"]["message"]


async def test_after_the_next_turn_the_rating_is_final(llm, model, token):
    model.reply("Paris.")
    first = await execute(token, message="Capital of France?")
    model.reply("Berlin.")
    await execute(token, conversationId=first["conversationId"], message="And Germany?")
    status, answer = await call("POST", url(first["turnId"]), token, {"rating": "up"})
    assert status == 409 and answer["error"] == {"message": ERROR_NOT_LATEST, "field": "turnId"}
    assert await AnswerFeedback.objects.acount() == 0


async def test_only_the_owner_rates(llm, model, token, alice, bob, carol):
    """Another team's member, or a teammate before it is shared: 404; a teammate reading it once shared:
    the 403 every write asked of a reader gets, saying why."""
    model.reply("Paris.")
    turn = await execute(token, message="Capital of France?")
    bob_token, carol_token = await _token(bob), await _token(carol)
    for who in (bob_token, carol_token):
        status, answer = await call("POST", url(turn["turnId"]), who, {"rating": "down"})
        assert (status, answer["error"]["field"]) == (404, "turnId")
        assert (await call("GET", url(turn["turnId"]), who))[0] == 404
    session = await AgentSession.objects.aget(pk=turn["conversationId"])
    await sync_to_async(session_share)(session=session, user=alice, shared=True)
    status, answer = await call("POST", url(turn["turnId"]), bob_token, {"rating": "down"})
    assert (status, answer["error"]) == (403, {"message": ERROR_READ_ONLY, "field": "turnId"})
    assert (await call("POST", url(turn["turnId"]), carol_token, {"rating": "down"}))[0] == 404
    assert await AnswerFeedback.objects.acount() == 0


async def test_without_a_token_nothing_is_read_or_written(llm, model, token):
    model.reply("Paris.")
    turn = await execute(token, message="Capital of France?")
    status, _ = await call("POST", url(turn["turnId"]), None, {"rating": "up"})
    assert status == 401
    assert (await call("GET", url(turn["turnId"]), token))[0] == 404  # no feedback yet
