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

from tools.base import InvokeResult
from tools.mcp import Answer, Ask, InputPause, Request, Resume

from .. import turns
from ..elicitations import (
    DECISION_ACTIONS,
    closed,
    decided_payload,
    elicitation_answered,
    elicitation_close,
    elicitation_request,
    resume_details,
    sampling_recorded,
)
from ..llm import ModelError
from ..models import ToolApproval
from .metering import charge_session_call, session_call_allowed

if TYPE_CHECKING:
    from .run import Call, Run

POLL = 0.5  # seconds between looks at the answer while the user thinks (nothing on any hot path)
WITHDRAWN = "The MCP server withdrew its question before it was answered."
TOOL_FAILED = "The tool call ended before the question was answered."


class WaitingQuestions:
    """The turns whose run in this process waits for the user's answer to its MCP server's question
    (`_ask`), so that a request waiting for such a run here (LocalRunner.wait, the JSON API) hears of
    it at once. It used to look at the database every half second: with 100 API turns waiting at once
    on one process, those looks were 12% of its CPU (py-spy, bench/scale_out.py --single)."""

    def __init__(self) -> None:
        self._asking: set[str] = set()
        self._listeners: dict[str, list[asyncio.Event]] = {}

    def asked(self, turn_id: str) -> None:
        self._asking.add(turn_id)
        for listener in self._listeners.get(turn_id, ()):
            listener.set()

    def answered(self, turn_id: str) -> None:
        self._asking.discard(turn_id)

    async def until_asked(self, turn_id: str) -> None:
        """Returns once the turn's run here waits for an answer (at once if it does now)."""
        if turn_id in self._asking:
            return
        listener = asyncio.Event()
        self._listeners.setdefault(turn_id, []).append(listener)
        try:
            await listener.wait()
        finally:
            listeners = self._listeners[turn_id]
            listeners.remove(listener)
            if not listeners:
                del self._listeners[turn_id]


waiting_questions = WaitingQuestions()


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
    waiting_questions.asked(run.turn.id)  # written: a request waiting for the run answers with the pause
    try:
        while (answer := await sync_to_async(elicitation_answered)(run.turn.id, item["id"])) is None:
            await asyncio.sleep(POLL)
    except asyncio.CancelledError:
        # The server's request is gone (its process died, or it withdrew the question): the call ends
        # with what happened, and `question_cut_close` closes the question with that.
        run.question_cut = item["id"]
        raise
    finally:
        state.awaiting = []
        waiting_questions.answered(run.turn.id)
    if await sync_to_async(closed)(run.turn.id, item["id"]):
        run.ended_while_asking = True  # a cancel or a new message ended the turn: the run stops after the call
        return answer
    run.turn.status = turns.Status.RUNNING  # the answer put the turn back to running
    decided = await sync_to_async(decided_payload)(run.turn.id, item["id"])
    await run.recorder.emit("approval.decided", {"decisions": [decided]})
    if request.mode == "sampling" and answer.action == "accept":  # the user let the server use their model
        return await _sampled(run, request, item["id"])
    return answer


async def _sampled(run: Run, request: Request, item_id: str) -> Answer:
    """The reply the session's model gives to what the server asked it (tools/mcp/elicitation.py
    sampling), charged to the turn like its own steps and kept on the request's audit row."""
    wanted = request.sampling
    system = [{"role": "system", "content": wanted["systemPrompt"]}] if wanted.get("systemPrompt") else []
    messages = system + [{"role": m["role"], "content": m["text"]} for m in wanted.get("messages", [])]
    member = {"team_id": run.turn.session.team_id, "user_id": run.turn.session.user_id}
    if run.llm is None:
        return Answer("accept", {"error": "The session has no model to answer with."})
    if not await sync_to_async(session_call_allowed)(**member):
        return Answer("accept", {"error": "The month's model quota is used up."})
    try:
        reply = await run.llm.stream_chat(messages=messages, tools=None)
    except ModelError as exc:
        content: dict = {"error": f"The model failed: {exc}"}
    else:  # a call of the turn's model outside its steps: metered as a title is, counting no second turn
        await sync_to_async(charge_session_call)(**member, mode=run.turn.mode, spec=run.spec, reply=reply)
        stop = "maxTokens" if reply.truncated else "endTurn"
        content = {"text": reply.content, "model": run.llm.label or run.spec.label, "stopReason": stop}
    await sync_to_async(sampling_recorded)(run.turn.id, item_id, content)
    return Answer("accept", content)


async def question_cut_close(run: Run, result: InvokeResult) -> None:
    """The call whose question was cut off unanswered has ended: the question is closed (its card
    goes, a late answer is refused) with the call's failure as the reason, and the turn runs on (the
    model gets that failure as the call's result)."""
    item_id, run.question_cut = run.question_cut, ""
    reason = (result.error_message or TOOL_FAILED) if not result.successful else WITHDRAWN
    decided = await sync_to_async(elicitation_close)(run.turn.id, item_id, reason)
    if decided is None:  # answered or closed meanwhile
        return
    run.turn.status = turns.Status.RUNNING
    await run.recorder.emit("approval.decided", {"decisions": [decided]})


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
