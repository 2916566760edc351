"""While a run's MCP tool call is open, its server may ask the user something (elicitation): the run
pauses the turn like an approval (`awaiting_approval`, the question in its state's `awaiting`, an
`approval.requested` event), waits for the answer (agents/elicitations.py) and hands it to the
server; the call then goes on. Only the tool calls made under `asking_for(run, call)` can ask.

A question that can be resumed (a 2026-07-28 multi round-trip over HTTP: tools/mcp/elicitation.py)
does not keep the call open: the call ends with InputPause, `question_paused` lists the question in
the state's `awaiting` with what the call needs to be sent again (kept on its ToolApproval row), and
the run pauses the turn like an approval and ends. The answer resumes the turn from any process, and
ToolCalls.resume_approved sends the call again with it (`resume_of`), after a restart too."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async

from tools.mcp import Answer, Ask, InputPause, Request, Resume

from .. import turns
from ..elicitations import (
    DECISION_ACTIONS,
    closed,
    decided_payload,
    elicitation_answered,
    elicitation_request,
    resume_details,
)
from ..models import ToolApproval

if TYPE_CHECKING:
    from .run import Call, Run

POLL = 0.5  # seconds between looks at the answer while the user thinks (nothing on any hot path)


def asking_for(run: Run, call: Call) -> Ask:
    async def ask(request: Request) -> Answer:
        return await _ask(run, call, request)

    return ask


async def _ask(run: Run, call: Call, request: Request) -> Answer:
    state = run.paused_state
    item = await sync_to_async(elicitation_request)(
        run.turn, call_id=call.id, name=call.name, arguments=call.arguments, request=request
    )
    await run.recorder.drain()  # what the run wrote so far goes first
    state.awaiting = [item]
    write = turns.awaiting_approval(state)
    turns.apply_locally(run.turn, write)
    await run.recorder.emit("approval.requested", {"calls": [item], "mode": state.mode}, turn_write=write)
    await run.recorder.drain()
    try:
        while (answer := await sync_to_async(elicitation_answered)(run.turn.id, item["id"])) is None:
            await asyncio.sleep(POLL)
    finally:
        state.awaiting = []
    if await sync_to_async(closed)(run.turn.id, item["id"]):
        run.ended_while_asking = True  # a cancel or a new message ended the turn: the run stops after the call
        return answer
    run.turn.status = turns.Status.RUNNING  # the answer put the turn back to running
    decided = await sync_to_async(decided_payload)(run.turn.id, item["id"])
    await run.recorder.emit("approval.decided", {"decisions": [decided]})
    return answer


async def question_paused(run: Run, call: Call, pause: InputPause) -> None:
    """The call paused on a question that can be resumed: its row (with what the call needs to be
    sent again) and the item the turn's pause lists."""
    resume = {"call": call.id, "key": pause.key, "state": pause.request_state}
    item = await sync_to_async(elicitation_request)(
        run.turn, call_id=call.id, name=call.name, arguments=call.arguments, request=pause.request, resume=resume
    )
    run.paused_state.awaiting.append(item)


def resume_of(row: ToolApproval) -> Resume:
    """The paused call's answer, to send it again with (the row of a question that can be resumed)."""
    key, state = resume_details(row)
    accepted = row.decision == ToolApproval.Decision.ACCEPTED
    answer = Answer(DECISION_ACTIONS[str(row.decision)], row.content if accepted else None)
    return Resume(key, answer, state)


class QuestionClosed(Exception):
    """The turn ended (a Stop, a new message) while its MCP server's question waited: its end was
    written then, so the run stops without writing anything more."""
