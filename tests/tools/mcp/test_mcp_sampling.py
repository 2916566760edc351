"""Sampling: a handshake-era server (the mcp SDK 1.30, tests/tools/mcp/sdk1_server.py `summarise`) asks
to use the user's model during a tool call. The user is asked on a card showing the request; once they
approve, the session's model writes the reply the server gets, charged to the turn and kept on the
request's audit row; a refusal, or a server whose mcp.json entry says "sampling": false, gets an
error and no model call."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from agents.elicitations import elicitation_answer
from agents.models import ToolApproval, Turn
from agents.run.asking import waiting_questions
from agents.run.reasoner import Reasoner
from agents.turns import turn_start
from agents.web.timeline import render_turn
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mcp import ready_host
from tests.helpers.sdk1 import sdk1_entry
from tools.base import CallContext
from tools.mcp.elicitation import SAMPLING_DECLINED, Answer, Asker, Request
from tools.registry import ToolRegistry
from usage.models import UsageDay

pytestmark = pytest.mark.slow  # a real server process on another SDK

TEXT = "The quarterly report shows revenue up four percent and costs flat."


async def summarised(tmp_path, answer: Answer | None, **entry) -> tuple[str, list[Request]]:
    registry = ToolRegistry("mcp")
    with ready_host(tmp_path, {"old": sdk1_entry(initTimeout=60, **entry)}, registry=registry):
        asked: list[Request] = []

        async def person(request: Request) -> Answer:
            asked.append(request)
            assert answer is not None, "nobody should be asked"
            return answer

        context = CallContext.of(None, asker=Asker.here(person))
        result = await registry.get("old__summarise").execute(f'{{"text": "{TEXT}"}}', context)
    assert result.successful, result.error_message
    return result.result or "", asked


async def test_the_server_gets_the_reply_the_caller_gives_once_approved(tmp_path):
    reply = {"text": "Revenue up 4%, costs flat.", "model": "Local model", "stopReason": "endTurn"}
    text, [request] = await summarised(tmp_path, Answer("accept", reply))
    assert text == "Local model wrote: Revenue up 4%, costs flat."
    assert request.mode == "sampling" and request.server == "old"
    assert request.sampling == {
        "messages": [{"role": "user", "text": TEXT}],
        "systemPrompt": "Summarise in one line.",
        "maxTokens": 60,
    }
    assert request.message == "asks to use your model for a reply of up to 60 tokens to these messages."


async def test_a_declined_request_is_an_error_for_the_server(tmp_path):
    text, asked = await summarised(tmp_path, Answer("decline"))
    assert len(asked) == 1 and text.startswith("refused:") and SAMPLING_DECLINED in text


async def test_a_server_whose_sampling_is_off_is_refused_without_asking(tmp_path):
    text, asked = await summarised(tmp_path, None, sampling=False)
    assert asked == [] and text.startswith("refused:")  # it was never offered: the SDK refuses at once


@async_db
async def test_in_a_turn_the_card_asks_and_the_sessions_model_answers_the_server(
    tmp_path, make_session, model, llm, alice
):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"], approval_policy=[])
    session = await make_session(mode="general", execution="agent")
    model.reply("", tool_calls=[("old__summarise", {"text": TEXT})], prompt_tokens=100, completion_tokens=1)
    model.reply("Revenue up 4%, costs flat.", prompt_tokens=20, completion_tokens=7)  # the server's request's
    model.reply("The server summarised it.", prompt_tokens=100, completion_tokens=1)
    with ready_host(tmp_path, {"old": sdk1_entry(initTimeout=60)}, serving=True):
        turn = await sync_to_async(turn_start)(session=session, text="Summarise the report")
        run = asyncio.create_task(Reasoner(llm=llm).run(turn.id))
        await asyncio.wait_for(waiting_questions.until_asked(turn.id), 60)
        row = await ToolApproval.objects.aget(turn_id=turn.id)
        assert (row.kind, row.request["mode"]) == ("elicitation", "sampling")
        assert row.request["sampling"]["messages"] == [{"role": "user", "text": TEXT}]
        waiting = await Turn.objects.select_related("session").aget(pk=turn.id)
        # The card shows what the server would send the model, and asks to approve it.
        page = await sync_to_async(render_turn)(waiting, [e async for e in waiting.events.order_by("seq")])
        assert "question-form" in page and 'value="accept" class="primary">Approve</button>' in page
        assert TEXT in page and "Summarise in one line." in page
        await sync_to_async(elicitation_answer)(
            turn=waiting, item_id=row.tool_call_id, action="accept", content=None, user=alice
        )
        await asyncio.wait_for(run, 60)
    done = await Turn.objects.aget(pk=turn.id)
    assert done.status == "completed" and done.answer == "The server summarised it."
    sampled = model.requests[1]["messages"]
    assert sampled == [
        {"role": "system", "content": "Summarise in one line."},
        {"role": "user", "content": TEXT},
    ]
    [result] = [e.payload async for e in done.events.filter(type="tool.result")]
    assert result["result"] == "scripted wrote: Revenue up 4%, costs flat."
    row = await ToolApproval.objects.aget(pk=row.pk)
    assert row.decision == "accepted" and row.content["text"] == "Revenue up 4%, costs flat."
    # Counted in the member's usage with the turn's calls, as one turn.
    usage = [(u.turns, u.prompt_tokens, u.completion_tokens) async for u in UsageDay.objects.filter(user=alice)]
    assert usage == [(1, 220, 9)]
