"""The MCP server's progress notifications and cancelled calls, through the official MCP client in
process over the real ASGI router: a call that asks for progress hears its turn's steps and tool
calls (answered as an SSE stream, a call that does not ask stays JSON), a cancelled call stops its
turn, and another user's cancellation of the same request id leaves it running; an approved call
goes on reporting the turn it resumes."""

from __future__ import annotations

import asyncio
import json

import anyio
import pytest
from mcp_types import ElicitResult

from agents.models import Turn
from agents.runner import get_runner
from interop.mcp_server import calls
from tests.helpers import async_db
from tests.helpers.interop import asgi_http, mcp_client

pytestmark = async_db

LEGACY = "2025-11-25"
ACCEPT = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": LEGACY}


def call(request_id: int, *, progress_token: str | None = None) -> dict:
    params: dict = {"name": "ask_general", "arguments": {"message": "Which modes?", "execution": "agent"}}
    if progress_token is not None:
        params["_meta"] = {"progressToken": progress_token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def cancel(request_id: int) -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}


def script_a_tool_call(model) -> None:
    model.reply("Let me look.", tool_calls=[("agent_list_modes", {})])
    model.reply("There are several modes.")


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
async def test_a_call_that_asks_for_progress_hears_its_steps_and_tool_calls(llm, model, alice_token, protocol):
    script_a_tool_call(model)
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async with mcp_client(alice_token, mode=protocol) as client:
        result = await client.call_tool(
            "ask_general", {"message": "Which modes?", "execution": "agent"}, progress_callback=progress
        )
    assert not result.is_error and result.content[0].text == "There are several modes."
    messages = [message for _progress, _total, message in heard]
    assert "Calling agent_list_modes…" in messages and "Step 2" in messages, heard
    assert messages.index("Calling agent_list_modes…") < messages.index("Step 2")
    values = [value for value, _total, _message in heard]
    assert values == sorted(set(values)), heard  # it only grows
    assert all(total is None for _value, total, _message in heard)  # a turn's step count is not known ahead


async def test_only_a_call_that_asks_for_progress_is_answered_as_a_stream(llm, model, alice_token):
    script_a_tool_call(model)
    script_a_tool_call(model)
    async with asgi_http(alice_token) as http:
        plain = await http.post("/mcp/", json=call(1), headers=ACCEPT)
        streamed = await http.post("/mcp/", json=call(2, progress_token="t-2"), headers=ACCEPT)
    assert plain.headers["content-type"] == "application/json"
    assert plain.json()["result"]["content"][0]["text"] == "There are several modes."
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[5:]) for line in streamed.text.splitlines() if line.startswith("data:") and line[5:]]
    notes = [e["params"] for e in events if e.get("method") == "notifications/progress"]
    assert notes and {note["progressToken"] for note in notes} == {"t-2"}
    assert "Calling agent_list_modes…" in [note["message"] for note in notes]
    assert events[-1]["id"] == 2 and events[-1]["result"]["content"][0]["text"] == "There are several modes."


async def _running_turn(text: str) -> Turn:
    turn = await Turn.objects.aget(user_message=text)
    assert not turn.is_finished and not turn.cancel_requested
    return turn


async def never_asked(context, params):
    raise AssertionError("nothing waits for approval here")


# "session": a 2025-11-25 client that takes elicitation, given a session (its cancel reaches the SDK too).
@pytest.mark.parametrize("protocol", ["legacy", "session", "2026-07-28"])
async def test_a_cancelled_call_stops_its_turn_and_another_users_cancel_does_not(
    llm, model, alice_token, carol_token, protocol
):
    model.delay(60)  # the turn's model call: still under way when the call is cancelled
    model.reply("Too late.")
    model.reply("Next answer.")
    call_scope = anyio.CancelScope()
    results: list = []

    elicitation = never_asked if protocol == "session" else None
    mode = "legacy" if protocol == "session" else protocol
    async with mcp_client(alice_token, mode=mode, elicitation_callback=elicitation) as client:

        async def call_and_keep() -> None:
            with call_scope:
                results.append(await client.call_tool("ask_general", {"message": "Take your time", "execution": "ask"}))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(call_and_keep)
            await asyncio.wait_for(model.requested.wait(), 30)
            turn = await _running_turn("Take your time")
            # Another user's cancellations, whatever request id they name, do not reach alice's call.
            async with asgi_http(carol_token) as http:
                for request_id in range(8):
                    refused = await http.post("/mcp/", json=cancel(request_id), headers=ACCEPT)
                    assert refused.status_code == 202
            await _running_turn("Take your time")
            call_scope.cancel()
        ended = await asyncio.wait_for(get_runner().wait(turn.id, session_id=turn.session_id), 30)
        # The client goes on: the cancelled call's late result (if any) is dropped.
        after = await client.call_tool("ask_general", {"message": "Again", "execution": "ask"})
    assert ended.status == Turn.Status.CANCELLED and ended.answer != "Too late."
    assert results == []
    assert not after.is_error and after.content[0].text == "Next answer."


async def test_a_cancel_before_its_call_answers_the_call_without_a_turn_and_a_late_one_does_nothing(
    llm, model, alice_token
):
    model.reply("Answered.")
    model.reply("Answered again.")
    async with asgi_http(alice_token) as http:
        early = await http.post("/mcp/", json=cancel(7), headers=ACCEPT)
        cancelled = await http.post("/mcp/", json=call(7), headers=ACCEPT)
        answered = await http.post("/mcp/", json=call(8), headers=ACCEPT)
        late = await http.post("/mcp/", json=cancel(8), headers=ACCEPT)  # after its call ended
        again = await http.post("/mcp/", json=call(8), headers=ACCEPT)  # the same id, a new call
    assert (early.status_code, late.status_code) == (202, 202)
    result = cancelled.json()["result"]
    assert result["isError"] and result["content"][0]["text"] == (
        "This call was cancelled before it began: no turn was started."
    )
    assert answered.json()["result"]["content"][0]["text"] == "Answered."
    assert again.json()["result"]["content"][0]["text"] == "Answered again."
    assert [t.user_message async for t in Turn.objects.order_by("created_at")] == ["Which modes?", "Which modes?"]


async def test_a_cancel_just_before_the_calls_turn_is_recorded_cancels_the_turn(llm, model, alice_token, monkeypatch):
    """The race the check before the turn leaves: the cancel lands after the call looked for one and
    before its turn is recorded; the turn is cancelled as it is recorded (even before its run began)."""

    async def looked_too_early(*args, **kwargs) -> bool:
        return False

    monkeypatch.setattr(calls, "cancelled_before", looked_too_early)
    model.delay(60)  # the turn's model call, if its run got that far: under way when the cancel lands
    model.reply("Too late.")
    async with asgi_http(alice_token) as http:
        early = await http.post("/mcp/", json=cancel(7), headers=ACCEPT)
        cancelled = await http.post("/mcp/", json=call(7), headers=ACCEPT)
    assert early.status_code == 202
    result = cancelled.json()["result"]
    assert result["isError"] and result["structuredContent"]["status"] == "cancelled"
    turn = await Turn.objects.aget(pk=result["structuredContent"]["turnId"])
    assert turn.status == Turn.Status.CANCELLED and turn.answer != "Too late."


async def test_an_approved_call_goes_on_reporting_progress(llm, model, alice_token):
    model.reply("", tool_calls=[("agent_change_mode", {"mode": "data-analysis", "branch": False, "reason": "Charts."})])
    model.reply("Switched.")
    model.reply("Here are your charts.")  # the turn that carries the request on in the new mode
    heard: list[str | None] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    async def approve(context, params):
        heard.append("(asked)")
        return ElicitResult(action="accept", content={"decision": "approve"})

    async with mcp_client(alice_token, mode="2026-07-28", elicitation_callback=approve) as client:
        result = await client.call_tool(
            "ask_general", {"message": "Revenue by month?", "execution": "agent"}, progress_callback=progress
        )
    assert result.content[0].text == "Here are your charts."
    assert "Calling agent_change_mode…" in heard and "(asked)" in heard, heard
    assert "Step 2" in heard[heard.index("(asked)") :], heard  # the approved turn's next step, then its follow-up
