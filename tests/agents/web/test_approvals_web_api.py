"""Approvals over HTTP: the JSON API's `awaiting_approval` answer and `approvals` continuation (with its
400/409 cases), the web cards and their buttons, the structured choice of a proposal's button, and
that nobody but the session's owner sees or decides an approval."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.models import AgentSession, ToolApproval, Turn
from agents.runner import get_runner
from agents.sessions import session_create
from aptix.tokens import api_token_create
from modes.models import AgentMode, ModeHistory
from tests.helpers import ServerLikeAsyncClient, async_db

pytestmark = async_db

URL = "/api/v1/agent/execute"
SWITCH = {"mode": "data-analysis", "branch": False, "reason": "Charts."}


@pytest.fixture
async def token(alice):
    _, secret = await sync_to_async(api_token_create)(user=alice, name="ci")
    return secret


async def post(body, token):
    response = await ServerLikeAsyncClient().post(
        URL, data=json.dumps(body), content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )
    return response.status_code, json.loads(response.content)


async def signed_in(user, password) -> ServerLikeAsyncClient:
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username=user.username, password=password)
    return client


# --- API ------------------------------------------------------------------------------------------


async def test_api_answers_awaiting_approval_and_continues_with_decisions(llm, model, token):
    first = model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    status, body = await post({"message": "Revenue by month?", "execution": "agent"}, token)
    assert status == 200 and body["status"] == "awaiting_approval"
    call_id = first.tool_calls[0].id
    assert body["approvals"] == [
        {
            "toolCallId": call_id,
            "tool": "agent_change_mode",
            "kind": "mode_change",
            "arguments": json.dumps(SWITCH),
            "reason": "Charts.",
        }
    ]
    assert body["mode"] == "general" and await ModeHistory.objects.acount() == 0

    model.reply("Switched.")
    decision = {"toolCallId": call_id, "decision": "approve", "scope": "once", "branch": None}
    status, body = await post({"conversationId": body["conversationId"], "approvals": [decision]}, token)
    assert status == 200, body
    assert body["status"] == "completed" and body["mode"] == "data-analysis" and body["approvals"] == []
    assert body["modeChanges"][0]["newMode"] == "data-analysis"


@pytest.mark.parametrize(
    "approvals, status, field",
    [
        ([{"toolCallId": "call_nope", "decision": "approve"}], 400, "approvals[0].toolCallId"),
        ([{"toolCallId": "CALL", "decision": "maybe"}], 400, "approvals[0].decision"),
        ([{"toolCallId": "CALL", "decision": "approve", "scope": "forever"}], 400, "approvals[0].scope"),
        ([{"toolCallId": "CALL", "decision": "approve", "branch": "yes"}], 400, "approvals[0].branch"),
        ("approve", 400, "approvals"),
    ],
)
async def test_api_bad_decisions_are_400_naming_the_field_and_write_nothing(
    llm, model, token, approvals, status, field
):
    first = model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    _, body = await post({"message": "Revenue?", "execution": "agent"}, token)
    approvals = json.loads(json.dumps(approvals).replace("CALL", first.tool_calls[0].id))
    code, answer = await post({"conversationId": body["conversationId"], "approvals": approvals}, token)
    assert code == status and answer["error"]["field"] == field, answer
    row = await ToolApproval.objects.aget()
    assert row.decision == "" and (await Turn.objects.aget()).status == "awaiting_approval"


async def test_api_every_pending_call_must_be_decided_and_stale_decisions_are_409(llm, model, token):
    first = model.reply("", tool_calls=[("agent_change_mode", SWITCH), ("agent_change_mode", SWITCH)])
    _, body = await post({"message": "Revenue?", "execution": "agent"}, token)
    one, two = (c.id for c in first.tool_calls)
    conversation = body["conversationId"]
    code, answer = await post(
        {"conversationId": conversation, "approvals": [{"toolCallId": one, "decision": "deny"}]}, token
    )
    assert code == 400 and answer["error"]["field"] == "approvals" and two in answer["error"]["message"]
    assert await ToolApproval.objects.filter(decision="").acount() == 2

    model.reply("Staying.")
    both = [{"toolCallId": one, "decision": "deny"}, {"toolCallId": two, "decision": "deny"}]
    code, answer = await post({"conversationId": conversation, "approvals": both}, token)
    assert code == 200 and answer["status"] == "completed"
    code, answer = await post({"conversationId": conversation, "approvals": both}, token)
    assert code == 409 and answer["error"]["field"] == "approvals"


async def test_api_choice_is_consent_and_a_bad_choice_is_400(llm, model, token):
    model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    model.reply("Switched.")
    code, body = await post(
        {"message": "2", "execution": "agent", "choice": {"mode": "data-analysis", "branch": False}}, token
    )
    assert code == 200 and body["status"] == "completed" and body["mode"] == "data-analysis"
    code, body = await post({"message": "2", "choice": {"mode": 5}}, token)
    assert code == 400 and body["error"]["field"] == "choice"


async def test_api_nobody_else_decides_an_approval(llm, model, token, bob):
    first = model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    _, body = await post({"message": "Revenue?", "execution": "agent"}, token)
    _, bob_token = await sync_to_async(api_token_create)(user=bob)
    decision = [{"toolCallId": first.tool_calls[0].id, "decision": "approve"}]
    code, answer = await post({"conversationId": body["conversationId"], "approvals": decision}, bob_token)
    assert code == 404 and answer["error"]["field"] == "conversationId"
    assert (await ToolApproval.objects.aget()).decision == ""


# --- web ------------------------------------------------------------------------------------------


async def test_the_card_shows_and_its_button_resumes_the_turn(llm, model, team_a, alice, password):
    session = await sync_to_async(session_create)(team=team_a, user=alice, execution="agent")
    client = await signed_in(alice, password)
    first = model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    await client.post(reverse("turn-new", args=[session.id]), {"message": "2"})  # typed: not consent
    turn = await get_runner().wait((await Turn.objects.aget(session=session)).id)
    assert turn.status == "awaiting_approval"

    page = (await client.get(reverse("session-detail", args=[session.id]))).content.decode()
    assert (
        "The agent wants to switch this session from <strong>general</strong> to <strong>Data Analysis</strong>" in page
    )
    assert ">Switch in a new session</button>" in page and ">Stay in general</button>" in page
    assert "waiting for your approval" in page
    sidebar = (await client.get(reverse("session-list"))).content.decode()
    assert ">waiting</span>" in sidebar

    model.reply("Switched.")
    url = reverse("approval-decide", args=[session.id, turn.id])
    response = await client.post(url, {"call": first.tool_calls[0].id, "decision": "switch"})
    assert response.status_code == 204
    turn = await get_runner().wait(turn.id)
    assert turn.status == "completed" and (await AgentSession.objects.aget(pk=session.id)).mode == "data-analysis"
    response = await client.post(url, {"call": first.tool_calls[0].id, "decision": "stay"})
    assert response.status_code == 409 and b"not waiting" in response.content
    page = (await client.get(reverse("session-detail", args=[session.id]))).content.decode()
    assert "Approved by alice" in page and "waiting for your approval" not in page


async def test_the_proposals_buttons_carry_the_choice(llm, model, team_a, alice, password):
    from modes.proposal import proposal_text

    session = await sync_to_async(session_create)(team=team_a, user=alice)
    client = await signed_in(alice, password)
    model.reply(proposal_text("Data Analysis", "data-analysis"))
    await client.post(reverse("turn-new", args=[session.id]), {"message": "Chart revenue"})
    await get_runner().wait((await Turn.objects.aget(session=session)).id)
    page = (await client.get(reverse("session-detail", args=[session.id]))).content.decode()
    switch = 'data-send="2) Switch this session to Data Analysis" data-choice-mode="data-analysis"'
    assert switch + ' data-choice-branch="false"' in page
    assert 'data-choice-mode="data-analysis" data-choice-branch="true"' in page


async def test_a_buttons_label_is_the_catalog_entry_of_the_mode_it_carries(llm, model, team_a, alice, password):
    """A model's proposal that names one mode and gives the key of another: the buttons carry the key
    (what the model will be asked to switch to) and say that mode's name from the catalog, so what a
    user clicks is what they consent to. A key the catalog lacks carries no consent at all."""
    from modes.proposal import proposal_text

    session = await sync_to_async(session_create)(team=team_a, user=alice)
    client = await signed_in(alice, password)
    model.reply(proposal_text("Data Analysis", "workflow-authoring"))
    await client.post(reverse("turn-new", args=[session.id]), {"message": "Chart revenue"})
    await get_runner().wait((await Turn.objects.aget(session=session)).id)
    page = (await client.get(reverse("session-detail", args=[session.id]))).content.decode()
    workflow = await AgentMode.objects.aget(key="workflow-authoring")
    assert (
        f'data-send="2) Switch this session to {workflow.display_name}" data-choice-mode="workflow-authoring"' in page
    )
    assert "Switch this session to Data Analysis" not in page

    model.reply(proposal_text("Data Analysis", "no-such-mode"))
    await client.post(reverse("turn-new", args=[session.id]), {"message": "Chart it anyway"})
    await get_runner().wait((await Turn.objects.filter(session=session).alatest("index")).id)
    page = (await client.get(reverse("session-detail", args=[session.id]))).content.decode()
    assert 'data-choice-mode="no-such-mode"' not in page
    assert 'data-send="2) Switch this session to Data Analysis"' in page  # the reply still goes


async def test_nobody_else_sees_or_decides_a_card(llm, model, team_a, alice, bob, password):
    session = await sync_to_async(session_create)(team=team_a, user=alice, execution="agent")
    first = model.reply("", tool_calls=[("agent_change_mode", SWITCH)])
    alice_client = await signed_in(alice, password)
    await alice_client.post(reverse("turn-new", args=[session.id]), {"message": "2"})
    turn = await get_runner().wait((await Turn.objects.aget(session=session)).id)
    bob_client = await signed_in(bob, password)
    response = await bob_client.post(
        reverse("approval-decide", args=[session.id, turn.id]), {"call": first.tool_calls[0].id, "decision": "switch"}
    )
    assert response.status_code == 404
    anonymous = await ServerLikeAsyncClient().post(
        reverse("approval-decide", args=[session.id, turn.id]), {"call": first.tool_calls[0].id, "decision": "switch"}
    )
    assert anonymous.status_code == 401
    assert (await ToolApproval.objects.aget()).decision == ""


async def test_grants_are_listed_and_revoked_in_the_tools_panel(team_a, alice, password):
    session = await sync_to_async(session_create)(team=team_a, user=alice)
    await AgentSession.objects.filter(pk=session.id).aupdate(approval_grants=["notes__add_note"])
    client = await signed_in(alice, password)
    page = (await client.get(reverse("session-detail", args=[session.id]))).content.decode()
    assert "Allowed for this session" in page and "<code>notes__add_note</code>" in page
    response = await client.post(reverse("session-grant-revoke", args=[session.id]), {"tool": "notes__add_note"})
    assert response.status_code == 200 and "notes__add_note" not in response.content.decode()
    assert (await AgentSession.objects.aget(pk=session.id)).approval_grants == []
    response = await client.post(reverse("session-grant-revoke", args=[session.id]), {"tool": "notes__add_note"})
    assert response.status_code == 400
