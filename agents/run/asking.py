"""While a run's MCP tool call is open, its server may ask the user something (elicitation): the run
pauses the turn like an approval (`awaiting_approval`, the question in its state's `awaiting`, an
`approval.requested` event), waits for the answer (agents/elicitations.py) and hands it to the
server; the call then goes on. Only the tool calls made under `asking_for(run, call)` can ask."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async

from tools.mcp.elicitation import Answer, Ask, Request

from .. import turns
from ..elicitations import closed, decided_payload, elicitation_answered, elicitation_request

if TYPE_CHECKING:
    from .tool_calls import Call, Run

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


class QuestionClosed(Exception):
    """The turn ended (a Stop, a new message) while its MCP server's question waited: its end was
    written then, so the run stops without writing anything more."""
