"""POST /api/v1/agent/execute: bearer auth, validation, AGN-011 mode flow and client tools."""

from __future__ import annotations

import json
import logging

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command

from agents.models import AgentSession, Turn
from agents.turns import turn_start
from aptix.preferences import preferences_update
from aptix.tokens import api_token_create
from modes.models import AgentMode, ModeHistory
from tests.helpers import ServerLikeAsyncClient, async_db

pytestmark = async_db

URL = "/api/v1/agent/execute"


@pytest.fixture
async def token(alice):
    _, secret = await sync_to_async(api_token_create)(user=alice, name="ci")
    return secret


@pytest.fixture
async def carol_token(carol):
    _, secret = await sync_to_async(api_token_create)(user=carol)
    return secret


async def post(body, token=None, raw=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = await ServerLikeAsyncClient().post(
        URL, data=raw if raw is not None else json.dumps(body), content_type="application/json", headers=headers
    )
    return response.status_code, json.loads(response.content)


async def test_missing_or_wrong_token_is_401_before_anything_else(llm, model):
    for token in [None, "apx_wrong", "nonsense"]:
        status, body = await post({"message": "hi"}, token)
        assert status == 401 and "bearer token" in body["error"]["message"]
    status, _ = await post(None, "apx_wrong", raw=b"{broken")
    assert status == 401
    assert model.calls == 0 and await Turn.objects.acount() == 0


async def test_new_conversation_defaults_to_general(llm, model, token, alice):
    model.reply("Hello from the model.")
    status, body = await post({"message": "Hi", "execution": "ask"}, token)
    assert status == 200, body
    assert body["status"] == "completed" and body["answer"] == "Hello from the model."
    assert body["mode"] == "general" and body["execution"] == "ask"
    assert body["branch"] is None and body["toolCalls"] == [] and body["modeChanges"] == []
    assert body["usage"]["promptTokens"] > 0 and body["usage"]["completionTokens"] > 0
    session = await AgentSession.objects.aget(pk=body["conversationId"])
    assert session.mode == "general" and session.user_id == alice.id
    assert (await Turn.objects.aget(pk=body["turnId"])).session_id == session.id


async def test_new_conversation_in_a_given_mode(llm, model, token):
    model.reply("ok")
    status, body = await post({"message": "Hi", "mode": " Data-Analysis "}, token)
    assert status == 200 and body["mode"] == "data-analysis"


async def test_follow_up_uses_the_persisted_mode_and_warns_on_mismatch(llm, model, token, caplog):
    caplog.set_level(logging.WARNING, logger="aptix.pipeline")
    model.reply("first")
    _, first = await post({"message": "Hi"}, token)
    model.reply("second")
    status, body = await post(
        {"conversationId": first["conversationId"], "mode": "ddr-authoring", "message": "again"}, token
    )
    assert status == 200 and body["mode"] == "general"
    assert "Current mode: general" in model.last_messages[0]["content"]
    assert any(getattr(r, "event", "") == "pipeline.mode_mismatch" for r in caplog.records)


async def test_mode_change_is_reported_and_persisted_once(llm, model, token):
    model.reply("", tool_calls=[("agent_change_mode", {"mode": "data-analysis", "branch": True, "reason": "Charts."})])
    choice = {"mode": "data-analysis", "branch": True}  # the answer to the proposal: consent to the switch
    status, body = await post({"message": "3", "execution": "ask", "choice": choice}, token)
    assert status == 200
    assert body["mode"] == "general"  # this conversation's: the branch, below, has the new one
    assert body["modeChanges"] == [
        {"previousMode": "general", "newMode": "data-analysis", "reason": "Charts.", "branch": True}
    ]
    assert body["branch"] == {"mode": "data-analysis", "reason": "Charts."}
    assert await ModeHistory.objects.filter(session_id=body["conversationId"]).acount() == 1


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "message"),
        ({"message": "   "}, "message"),
        ({"message": 5}, "message"),
        ({"message": "hi", "execution": "turbo"}, "execution"),
        ({"message": "hi", "mode": "astrology"}, "mode"),
        ({"message": "hi", "mode": 3}, "mode"),
        ({"message": "hi", "tools": "nope"}, "tools"),
        ({"message": "hi", "tools": [{"type": "function"}]}, "tools[0]"),
        (
            {"message": "hi", "tools": [{"type": "function", "function": {"name": "bad name"}}]},
            "tools[0].function.name",
        ),
        (
            {"message": "hi", "tools": [{"type": "function", "function": {"name": "agent_change_mode"}}]},
            "tools[0].function.name",
        ),
        ({"message": "hi", "toolResults": [{"toolCallId": "x", "content": "y"}]}, "conversationId"),
        ({"message": "hi", "toolResults": [{"content": "y"}]}, "toolResults[0].toolCallId"),
        ({"message": "hi", "surprise": True}, "surprise"),
        ({"conversationId": 42, "message": "hi"}, "conversationId"),
    ],
)
async def test_bad_input_is_400_naming_the_field_and_writes_nothing(llm, model, token, body, field):
    status, answer = await post(body, token)
    assert status == 400, answer
    assert answer["error"]["field"] == field and answer["error"]["message"]
    assert await AgentSession.objects.acount() == 0 and await Turn.objects.acount() == 0
    assert model.calls == 0


async def test_invalid_json_body_is_400(llm, token):
    status, body = await post(None, token, raw=b"{broken")
    assert status == 400 and "JSON object" in body["error"]["message"]


async def test_someone_elses_conversation_is_404(llm, model, token, carol_token):
    model.reply("mine")
    _, mine = await post({"message": "Hi"}, token)
    status, body = await post({"conversationId": mine["conversationId"], "message": "let me in"}, carol_token)
    assert status == 404 and body["error"]["field"] == "conversationId"
    assert await Turn.objects.acount() == 1


async def test_client_tool_calls_come_back_pending_and_continue_the_turn(llm, model, token):
    tool = {
        "type": "function",
        "function": {
            "name": "read_local_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    planned = model.reply("", tool_calls=[("read_local_file", {"path": "notes.md"}), ("agent_list_modes", {})])
    status, body = await post({"message": "Summarise notes.md", "execution": "agent", "tools": [tool]}, token)
    assert status == 200 and body["status"] == "requires_action"
    [pending] = body["toolCalls"]
    assert pending["id"] == planned.tool_calls[0].id
    assert json.loads(pending["function"]["arguments"]) == {"path": "notes.md"}
    assert "read_local_file" in model.last_tools

    wrong = await post(
        {"conversationId": body["conversationId"], "toolResults": [{"toolCallId": "call_unknown", "content": "x"}]},
        token,
    )
    assert wrong[0] == 400 and wrong[1]["error"]["field"] == "toolResults"

    model.reply("The notes say hello.")
    status, done = await post(
        {
            "conversationId": body["conversationId"],
            "toolResults": [{"toolCallId": pending["id"], "content": "# Notes\nhello"}],
        },
        token,
    )
    assert status == 200 and done["status"] == "completed" and done["turnId"] == body["turnId"]
    assert done["answer"] == "The notes say hello."
    tool_messages = [m for m in model.last_messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [c.id for c in reversed(planned.tool_calls)] or {
        m["tool_call_id"] for m in tool_messages
    } == {c.id for c in planned.tool_calls}
    assert any(m["content"] == "# Notes\nhello" for m in tool_messages)
    again = await post(
        {"conversationId": body["conversationId"], "toolResults": [{"toolCallId": pending["id"], "content": "again"}]},
        token,
    )
    assert again[0] == 409


async def test_a_running_turn_blocks_a_second_one(llm, model, token, alice, team_a):
    from agents.runner import get_runner
    from agents.sessions import session_create

    session = await sync_to_async(session_create)(team=team_a, user=alice)
    first = await sync_to_async(turn_start)(session=session, text="first")
    model.reply("slow " * 300, chunk_delay=0.01)
    task = get_runner().start(first.id)
    status, body = await post({"conversationId": session.id, "message": "second"}, token)
    assert status == 409 and "still running" in body["error"]["message"]
    assert first.id in get_runner().tasks
    await task


async def test_cancel_endpoint(llm, model, token, carol_token, alice, team_a):
    from agents.sessions import session_create

    session = await sync_to_async(session_create)(team=team_a, user=alice)
    turn = await sync_to_async(turn_start)(session=session, text="queued")
    client = ServerLikeAsyncClient()
    other = await client.post(f"/api/v1/turns/{turn.id}/cancel", headers={"Authorization": f"Bearer {carol_token}"})
    assert other.status_code == 404
    response = await client.post(f"/api/v1/turns/{turn.id}/cancel", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 202
    turn = await Turn.objects.aget(pk=turn.id)
    assert turn.status == "cancelled"
    assert [e.type async for e in turn.events.all()] == ["turn.cancelled"]


async def test_create_api_token_command(alice, capsys):
    await sync_to_async(call_command)("create_api_token", "alice", "--name", "laptop")
    secret = capsys.readouterr().out.strip()
    assert secret.startswith("apx_")
    from aptix.tokens import api_token_user

    assert (await sync_to_async(api_token_user)(f"Bearer {secret}")).username == "alice"


async def test_a_turn_left_running_by_a_stopped_server_does_not_block_the_session(llm, model, token, alice, team_a):
    from agents.sessions import session_create
    from agents.turns import ERROR_INTERRUPTED

    session = await sync_to_async(session_create)(team=team_a, user=alice)
    orphan = await sync_to_async(turn_start)(session=session, text="first")
    await Turn.objects.filter(pk=orphan.id).aupdate(status="running")  # its process died
    model.reply("back again")
    status, body = await post({"conversationId": session.id, "message": "second"}, token)
    assert status == 200 and body["answer"] == "back again"
    orphan = await Turn.objects.aget(pk=orphan.id)
    assert orphan.status == "failed" and orphan.error == ERROR_INTERRUPTED


async def test_continuing_a_turn_twice_at_once_runs_it_once(llm, model, token):
    """Two identical toolResults requests at the same moment: one continues the turn, the other is
    told 409; the turn runs once (no second model call, no duplicate events) and completes."""
    import asyncio

    tool = {"type": "function", "function": {"name": "read_local_file", "parameters": {"type": "object"}}}
    planned = model.reply("", tool_calls=[("read_local_file", {"path": "notes.md"})])
    _, body = await post({"message": "Summarise notes.md", "execution": "agent", "tools": [tool]}, token)
    assert body["status"] == "requires_action"
    model.reply("The notes say hello.")
    result = {
        "conversationId": body["conversationId"],
        "toolResults": [{"toolCallId": planned.tool_calls[0].id, "content": "hello"}],
    }
    answers = await asyncio.gather(post(result, token), post(result, token))
    assert sorted(status for status, _ in answers) == [200, 409]
    done = next(answer for status, answer in answers if status == 200)
    assert done["status"] == "completed" and done["answer"] == "The notes say hello."
    assert model.calls == 2
    turn = await Turn.objects.aget(pk=body["turnId"])
    assert [e.type async for e in turn.events.order_by("seq")][-1] == "turn.completed"


async def test_a_switch_here_with_choice_carries_the_request_on_and_names_the_follow_up(llm, model, token):
    """The API does what the page does after "Switch this session": the response is the switching
    turn's, and `followUp` is the turn that ran the request in the new mode, run to its end."""
    model.reply("Data Analysis fits this better.")
    status, first = await post({"message": "Chart revenue by month", "execution": "ask"}, token)
    assert status == 200 and first["followUp"] is None
    model.reply("", tool_calls=[("agent_change_mode", {"mode": "data-analysis", "branch": False, "reason": "Charts."})])
    model.reply("Revenue by month: …")
    choice = {"mode": "data-analysis", "branch": False}
    status, body = await post({"conversationId": first["conversationId"], "message": "2", "choice": choice}, token)
    assert status == 200, body
    assert body["status"] == "completed" and body["mode"] == "data-analysis"
    follow_up = body["followUp"]
    assert follow_up["turnId"] not in (body["turnId"], first["turnId"])
    assert (follow_up["conversationId"], follow_up["status"], follow_up["answer"]) == (
        first["conversationId"],
        "completed",
        "Revenue by month: …",
    )
    assert (follow_up["mode"], follow_up["execution"]) == ("data-analysis", "agent")
    turn = await Turn.objects.aget(pk=follow_up["turnId"])
    assert (turn.origin, turn.user_message) == (Turn.Origin.CONTINUED, "Chart revenue by month")


async def test_a_new_conversation_starts_in_the_users_defaults_unless_the_request_names_its_own(
    llm, model, token, alice
):
    """The user's default mode and execution (Settings) were ignored: the catalog's default, Ask."""
    await sync_to_async(preferences_update)(
        user=alice, default_mode="data-analysis", default_execution="agent", theme="system", notify_turns=False
    )
    model.reply("From the defaults.")
    status, body = await post({"message": "Hi"}, token)
    assert status == 200, body
    assert (body["mode"], body["execution"]) == ("data-analysis", "agent")

    model.reply("From the request.")
    status, body = await post({"message": "Hi", "mode": "general", "execution": "ask"}, token)
    assert (body["mode"], body["execution"]) == ("general", "ask")

    await AgentMode.objects.filter(key="data-analysis").aupdate(is_active=False)  # a default gone stale
    model.reply("From the catalog.")
    status, body = await post({"message": "Hi"}, token)
    assert status == 200 and (body["mode"], body["execution"]) == ("general", "agent")
