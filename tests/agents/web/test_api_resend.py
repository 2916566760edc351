"""POST /api/v1/turns/<turnId>/resend: Edit, Retry and Regenerate for programs.
The same service as the workspace's buttons: the new turn runs in the persisted mode and answers as
/agent/execute does; bad input or another user's turn writes nothing."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from agents.models import Turn
from aptix.tokens import api_token_create
from tests.helpers import ServerLikeAsyncClient, async_db

pytestmark = [async_db, pytest.mark.usefixtures("no_limits")]


@pytest.fixture
def no_limits():
    with override_settings(APTIX_RATE_TURNS=None, APTIX_RATE_API=None, APTIX_RATE_BAD_TOKENS=None):
        yield


@pytest.fixture
async def token(alice):
    return (await sync_to_async(api_token_create)(user=alice, name="ci"))[1]


async def post(url: str, body, token: str | None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    raw = body if isinstance(body, bytes) else json.dumps(body)
    response = await ServerLikeAsyncClient().post(url, data=raw, content_type="application/json", headers=headers)
    return response.status_code, json.loads(response.content)


async def execute(token: str, **body) -> dict:
    status, answer = await post("/api/v1/agent/execute", {"execution": "ask", **body}, token)
    assert status == 200, answer
    return answer


def resend_url(turn_id: str) -> str:
    return f"/api/v1/turns/{turn_id}/resend"


async def test_an_edit_answers_like_execute_and_the_model_no_longer_sees_the_replaced_turns(llm, model, token):
    model.reply("Paris.")
    first = await execute(token, message="Capital of France?")
    model.reply("Berlin.")
    second = await execute(token, conversationId=first["conversationId"], message="And of Germany?")

    model.reply("Rome.")
    status, body = await post(resend_url(first["turnId"]), {"kind": "edit", "message": "Capital of Italy?"}, token)
    assert status == 200, body
    assert (body["conversationId"], body["status"], body["answer"]) == (first["conversationId"], "completed", "Rome.")
    sent = [(m["role"], m["content"]) for m in model.last_messages if m["role"] in ("user", "assistant")]
    assert sent == [("user", "Capital of Italy?")]  # both earlier turns were replaced
    replaced = {t.pk: t.replaced_by_id async for t in Turn.objects.filter(pk__in=[first["turnId"], second["turnId"]])}
    assert replaced == {first["turnId"]: body["turnId"], second["turnId"]: body["turnId"]}
    assert (await Turn.objects.aget(pk=body["turnId"])).origin == "edit"


async def test_retry_a_failed_turn_and_regenerate_the_last_answer(llm, model, token):
    model.error(500, "The model server fell over.")
    failed = await execute(token, message="Try this")
    assert failed["status"] == "failed"

    model.reply("Worked this time.")
    status, retried = await post(resend_url(failed["turnId"]), {"kind": "retry"}, token)
    assert (status, retried["status"], retried["answer"]) == (200, "completed", "Worked this time.")

    model.reply("Another answer.")
    status, regenerated = await post(resend_url(retried["turnId"]), {"kind": "regenerate"}, token)
    assert (status, regenerated["answer"]) == (200, "Another answer.")
    assert [m["content"] for m in model.last_messages if m["role"] == "user"] == ["Try this"]


@pytest.mark.parametrize(
    ("body", "status", "field", "reason"),
    [
        ({"kind": "again"}, 400, "kind", "'edit', 'retry' or 'regenerate'"),
        ({"kind": 3}, 400, "kind", "'edit', 'retry' or 'regenerate'"),
        ({"kind": "edit", "message": ""}, 400, "message", "message"),
        ({"kind": "edit", "message": ["x"]}, 400, "message", "must be a string"),
        ({"kind": "regenerate", "message": "x"}, 400, "message", "Only an edit"),
        ({"kind": "retry"}, 400, "turnId", "failed or stopped"),
        ({"kind": "edit", "message": "x", "mode": "general"}, 400, "mode", "Unknown field 'mode'"),
        (b"{broken", 400, None, "JSON object"),
    ],
)
async def test_bad_input_is_400_naming_the_field_and_writes_nothing(llm, model, token, body, status, field, reason):
    model.reply("Fine.")
    first = await execute(token, message="Hello")
    got, answer = await post(resend_url(first["turnId"]), body, token)
    assert (got, answer["error"]["field"]) == (status, field), answer
    assert reason in answer["error"]["message"]
    assert await Turn.objects.acount() == 1 and model.calls == 1


async def test_only_the_last_turn_is_regenerated(llm, model, token):
    model.reply("One.")
    first = await execute(token, message="1")
    model.reply("Two.")
    await execute(token, conversationId=first["conversationId"], message="2")
    status, answer = await post(resend_url(first["turnId"]), {"kind": "regenerate"}, token)
    assert (status, answer["error"]["field"]) == (409, "turnId") and "Only the last turn" in answer["error"]["message"]
    assert await Turn.objects.acount() == 2


async def test_a_token_comes_first_and_another_users_turn_is_404(llm, model, token, carol):
    model.reply("Mine.")
    first = await execute(token, message="Hello")
    status, _ = await post(resend_url(first["turnId"]), {"kind": "regenerate"}, None)
    assert status == 401
    carol_token = (await sync_to_async(api_token_create)(user=carol))[1]
    status, answer = await post(resend_url(first["turnId"]), {"kind": "regenerate"}, carol_token)
    assert (status, answer["error"]["field"]) == (404, "turnId")
    assert await Turn.objects.acount() == 1 and model.calls == 1
