"""The A2A agent through the official A2A client (a2a-sdk), in process over the real ASGI router: the
public card names the service only, the extended card behind the token lists the user's modes as
skills, message/send runs a turn as the token's user, message/stream streams it, a turn waiting for
approval is `input-required` and a follow-up message decides it, tasks/cancel stops a running turn,
and no other user's task, conversation or mode is reachable."""

from __future__ import annotations

import json
import uuid

import pytest
from a2a.helpers import get_artifact_text
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Struct, Value

from agents.models import AgentSession, ToolApproval, Turn
from modes.models import AgentMode, ModeHistory
from tests.helpers import async_db
from tests.helpers.catalogs import B_ONLY, team_only_mode
from tests.helpers.interop import a2a_client, a2a_http

pytestmark = async_db

SWITCH = {"mode": "data-analysis", "branch": False, "reason": "Charts."}


@pytest.fixture
async def b_only(team_b):
    return await sync_to_async(team_only_mode)(team_b)


def message(text: str = "", *, task_id: str = "", context_id: str = "", data=None, **metadata) -> SendMessageRequest:
    parts = [Part(text=text)] if text else []
    if data is not None:
        parts.append(Part(data=ParseDict(data, Value())))
    msg = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=parts, task_id=task_id, context_id=context_id)
    if metadata:
        struct = Struct()
        struct.update(metadata)
        msg.metadata.CopyFrom(struct)
    return SendMessageRequest(message=msg)


async def send(client, request: SendMessageRequest):
    """The task message/send answers (the client's one StreamResponse when not streaming)."""
    responses = [response async for response in client.send_message(request)]
    assert len(responses) == 1 and responses[0].HasField("task"), responses
    return responses[0].task


async def test_the_public_card_names_the_service_only(alice_token, settings):
    settings.APTIX_PUBLIC_URL = "https://aptix.example"  # the answers' links; the endpoint is where the card was read
    async with a2a_http() as http:  # no token
        response = await http.get("/.well-known/agent-card.json")
    assert response.status_code == 200
    card = response.json()
    assert card["name"] == "Aptix" and card["skills"] == []
    assert [i["url"] for i in card["supportedInterfaces"]] == ["http://testserver/a2a/"] * 2
    assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"1.0", "0.3"}
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
    assert card["capabilities"]["extendedAgentCard"] and card["capabilities"]["streaming"]


async def test_a_host_outside_allowed_hosts_is_refused(alice_token):
    async with a2a_http(alice_token) as http:
        card = await http.get("/.well-known/agent-card.json", headers={"Host": "evil.example"})
        rpc = await http.post(
            "/a2a/", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"}, headers={"Host": "evil.example"}
        )
    assert card.status_code == rpc.status_code == 400
    assert "ALLOWED_HOSTS" in card.json()["error"]["message"]


async def test_no_token_or_a_bad_one_is_401_with_the_bearer_challenge(alice, alice_token):
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    for token in (None, "apx_wrong"):
        async with a2a_http(token) as http:
            for path in ("/a2a/", "/a2a"):
                response = await http.post(path, json=body)
                assert response.status_code == 401
                assert response.headers["WWW-Authenticate"].startswith("Bearer")
    alice.is_active = False
    await alice.asave()
    async with a2a_http(alice_token) as http:
        assert (await http.post("/a2a/", json=body)).status_code == 401


async def test_the_extended_card_lists_the_modes_of_the_users_team(alice_token, carol_token, b_only):
    async with a2a_client(alice_token) as client:
        alices = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
    async with a2a_client(carol_token) as client:
        carols = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
    alice_skills = {skill.id: skill for skill in alices.skills}
    assert {"general", "data-analysis"} <= set(alice_skills) and B_ONLY not in alice_skills
    assert B_ONLY in {skill.id for skill in carols.skills}
    analysis = await AgentMode.objects.aget(key="data-analysis")
    skill = alice_skills["data-analysis"]
    assert (skill.name, skill.description) == (analysis.display_name, analysis.description)
    assert list(skill.examples) == list(analysis.example_utterances)


async def test_send_runs_a_turn_as_the_user_and_answers_a_completed_task(llm, model, alice, alice_token, settings):
    settings.APTIX_PUBLIC_URL = "https://aptix.example"
    model.reply("Hello from the model.")
    model.reply("Still here: [the chart](/media/images/chart.png).")
    async with a2a_client(alice_token) as client:
        task = await send(client, message("Hi", execution="ask"))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert get_artifact_text(task.artifacts[0]) == "Hello from the model."
        again = await send(client, message("Again", context_id=task.context_id))
    turn = await Turn.objects.select_related("session").aget(pk=task.id)
    assert turn.session_id == task.context_id and turn.session.user_id == alice.id
    assert (turn.session.mode, turn.session.origin) == ("general", "via A2A")
    assert again.context_id == task.context_id and again.id != task.id
    # Links to the site's paths are made absolute: the client is not on the site.
    assert (
        get_artifact_text(again.artifacts[0])
        == "Still here: [the chart](https://aptix.example/media/images/chart.png)."
    )
    assert await Turn.objects.filter(session_id=task.context_id).acount() == 2


async def test_the_skill_in_the_metadata_names_the_mode(llm, model, alice_token, b_only):
    model.reply("ok")
    async with a2a_client(alice_token) as client:
        task = await send(client, message("Hi", skill="data-analysis", execution="ask"))
        with pytest.raises(InvalidParamsError) as refused:
            await send(client, message("Secret playbook", skill=B_ONLY))
    assert (await AgentSession.objects.aget(pk=task.context_id)).mode == "data-analysis"
    assert B_ONLY in str(refused.value) and "extended agent card" in str(refused.value)
    assert await Turn.objects.acount() == 1


async def test_stream_sends_the_task_working_each_tool_the_artifact_and_completed(llm, model, alice_token):
    model.reply("Let me look.", tool_calls=[("agent_list_modes", {})])  # a step's text that is not the answer
    model.reply(pieces=["There are ", "several ", "modes."], chunk_delay=0.05)
    async with a2a_client(alice_token, streaming=True) as client:
        events = [event async for event in client.send_message(message("What modes are there?", execution="agent"))]
    kinds = [event.WhichOneof("payload") for event in events]
    assert kinds[0] == "task" and kinds[-2:] == ["artifact_update", "status_update"], kinds
    states = [event.status_update.status.state for event in events if event.HasField("status_update")]
    assert states[0] == TaskState.TASK_STATE_WORKING and states[-1] == TaskState.TASK_STATE_COMPLETED
    notes = [
        event.status_update.status.message.parts[0].text
        for event in events
        if event.HasField("status_update") and event.status_update.status.message.parts
    ]
    assert "Calling agent_list_modes…" in notes
    final = events[-2].artifact_update
    assert (final.last_chunk, final.append) == (True, False)
    assert get_artifact_text(final.artifact) == "There are several modes."
    # Before it, the reply's pieces as the model wrote them: a step's first piece restarts the answer.
    pieces = [e.artifact_update for e in events[:-2] if e.HasField("artifact_update")]
    assert pieces and all(p.artifact.artifact_id == final.artifact.artifact_id for p in pieces)
    previewed = ""
    for piece in pieces:
        previewed = (previewed if piece.append else "") + get_artifact_text(piece.artifact)
    assert previewed == "There are several modes."
    assert {event.status_update.task_id for event in events if event.HasField("status_update")} == {events[0].task.id}


@pytest.mark.parametrize(
    "answer, mode, decision",
    [
        ({"text": "approve"}, "data-analysis", "approved"),
        ({"data": {"decision": "deny"}}, "general", "denied"),
    ],
)
async def test_a_turn_waiting_for_approval_is_input_required_and_a_follow_up_decides_it(
    llm, model, alice_token, answer, mode, decision
):
    first = model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    model.reply("Decided.")
    model.reply("Here are your charts.")  # after an approved switch: the request carried on in the new mode
    async with a2a_client(alice_token) as client:
        task = await send(client, message("Revenue by month?", execution="agent"))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        waiting = task.status.message
        assert "switch this conversation to the mode 'data-analysis' (reason: Charts.)" in waiting.parts[0].text
        approvals = MessageToDict(waiting.parts[1].data)["approvals"]
        assert [(a["tool"], a["kind"]) for a in approvals] == [("agent_change_mode", "mode_change")]
        assert (await AgentSession.objects.aget(pk=task.context_id)).mode == "general"  # nothing decided yet

        text, data = answer.get("text", ""), answer.get("data")
        follow_up = message(text, task_id=task.id, context_id=task.context_id, data=data)
        done = await send(client, follow_up)
        fetched = await client.get_task(GetTaskRequest(id=task.id))
    assert done.id == task.id and done.status.state == TaskState.TASK_STATE_COMPLETED
    expected = "Here are your charts." if decision == "approved" else "Decided."
    assert get_artifact_text(done.artifacts[0]) == expected
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(fetched.artifacts[0]) == expected
    assert (await AgentSession.objects.aget(pk=task.context_id)).mode == mode
    assert (await ToolApproval.objects.aget(tool_call_id=first.tool_calls[0].id)).decision == decision
    assert await ModeHistory.objects.acount() == (decision == "approved")


async def test_a_follow_up_that_is_no_decision_is_refused(llm, model, alice_token):
    model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    async with a2a_client(alice_token) as client:
        task = await send(client, message("Revenue by month?", execution="agent"))
        with pytest.raises(InvalidParamsError) as refused:
            await send(client, message("maybe later", task_id=task.id, context_id=task.context_id))
    assert '"approve" or "deny"' in str(refused.value)
    assert (await Turn.objects.aget(pk=task.id)).status == Turn.Status.AWAITING_APPROVAL


async def test_cancel_stops_a_running_turn(llm, model, alice_token):
    model.delay(30)
    model.reply("Too late.")
    request = message("Take your time", execution="ask")
    request.configuration.return_immediately = True
    async with a2a_client(alice_token) as client:
        task = await send(client, request)
        assert task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
        cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
    assert cancelled.id == task.id and cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert (await Turn.objects.aget(pk=task.id)).status == Turn.Status.CANCELLED


async def test_another_users_task_and_conversation_are_not_found(llm, model, alice_token, carol_token):
    model.reply("Alice's secret answer.")
    async with a2a_client(alice_token) as client:
        task = await send(client, message("Secret", execution="ask"))
    async with a2a_client(carol_token) as client:
        for crafted in (task.id, "0" * 32, "../../etc"):
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id=crafted))
        with pytest.raises(TaskNotFoundError):
            await client.cancel_task(CancelTaskRequest(id=task.id))
        with pytest.raises(TaskNotFoundError):
            await send(client, message("approve", task_id=task.id))
        with pytest.raises(InvalidParamsError) as refused:
            await send(client, message("Peek", context_id=task.context_id))
    assert "No conversation with this id." in str(refused.value)
    assert await Turn.objects.filter(session_id=task.context_id).acount() == 1


async def test_the_0_3_method_names_are_served_on_the_same_endpoint(llm, model, alice_token):
    model.reply("Hello over 0.3.")
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "message/send",
        "params": {
            "message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "Hi"}]}
        },
    }
    async with a2a_http(alice_token) as http:
        response = await http.post("/a2a/", json=body)
        task = response.json()["result"]
        get = {"jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": {"id": task["id"]}}
        got = await http.post("/a2a/", json=get)
    assert task["kind"] == "task" and task["status"]["state"] == "completed", json.dumps(task)
    assert task["artifacts"][0]["parts"][0]["text"] == "Hello over 0.3."
    assert got.json()["result"]["id"] == task["id"]


async def test_a_channel_layer_hiccup_stops_only_the_preview(llm, model, alice_token, monkeypatch):
    layer = get_channel_layer()

    async def broken(channel):
        raise ConnectionError("Redis went away")

    monkeypatch.setattr(layer, "receive", broken)
    model.reply("The answer all the same.")
    async with a2a_client(alice_token, streaming=True) as client:
        events = [event async for event in client.send_message(message("Hi", execution="ask"))]
    assert get_artifact_text(events[-2].artifact_update.artifact) == "The answer all the same."
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
