"""Aptix's turns as A2A tasks, and a follow-up message read as a decision.

A task is a turn (task id = turn id) and its context the conversation (context id = session id). A
request carried on in a new turn after a consented mode switch stays one task: its state and answer
are those of the last turn of that chain (`chain`: the task's turn, then each turn that continued it).
A turn waiting for approvals is `input-required`; its status message says what waits, in words and as
a data part (`{"approvals": [{"toolCallId", "tool", "kind", "arguments", "reason"}]}`), and a message
on the same task answering "approve" or "deny" (or a data part `{"decision": "approve"|"deny"}`)
decides every call that waits."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from a2a.helpers import get_data_parts, get_text_parts
from a2a.types.a2a_pb2 import Artifact, Message, Part, Role, Task, TaskState, TaskStatus
from a2a.utils.errors import InvalidParamsError
from django.urls import reverse
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Struct, Value

from agents.state import PausedState, turn_state
from agents.turns import Status

if TYPE_CHECKING:
    from agents.models import Turn

STATE_OF_STATUS = {
    Status.QUEUED: TaskState.TASK_STATE_SUBMITTED,
    Status.RUNNING: TaskState.TASK_STATE_WORKING,
    Status.REQUIRES_ACTION: TaskState.TASK_STATE_INPUT_REQUIRED,
    Status.AWAITING_APPROVAL: TaskState.TASK_STATE_INPUT_REQUIRED,
    Status.COMPLETED: TaskState.TASK_STATE_COMPLETED,
    Status.FAILED: TaskState.TASK_STATE_FAILED,
    Status.CANCELLED: TaskState.TASK_STATE_CANCELED,
    Status.LIMIT_REACHED: TaskState.TASK_STATE_FAILED,
}
ANSWER = "answer"  # the completed task's artifact
ANSWERABLE_KINDS = frozenset({"tool", "mode_change"})
APPROVE = frozenset({"approve", "approved", "yes", "allow", "ok"})
DENY = frozenset({"deny", "denied", "no", "reject"})
ERROR_DECISION = (
    "This task waits for your approval: answer \"approve\" or \"deny\" (or a data part "
    '{"decision": "approve"|"deny"}).'
)
SITE_LINK = re.compile(r"\]\((/[^)\s]+)\)")  # a Markdown link or image to a path of this site


def effective(chain: Sequence[Turn]) -> Turn:
    """The turn whose state the task shows: the last of its chain."""
    return chain[-1]


def awaiting(turn: Turn) -> list[dict[str, Any]]:
    """The calls a paused turn waits on (none for any other turn)."""
    state = turn_state(turn)
    return [dict(call) for call in state.awaiting] if isinstance(state, PausedState) else []


def _struct(value: dict[str, Any]) -> Struct:
    struct = Struct()
    struct.update(value)
    return struct


def _question(call: dict[str, Any]) -> str:
    if call["kind"] == "mode_change":
        try:
            wanted = json.loads(call["arguments"] or "{}").get("mode", "")
        except (ValueError, AttributeError):
            wanted = ""
        what = f"switch this conversation to the mode {wanted!r}" if wanted else "change this conversation's mode"
    else:
        what = f"run the tool `{call['name']}` with {call['arguments'] or '{}'}"
    reason = f" (reason: {call['reason']})" if call.get("reason") else ""
    return f"Aptix wants to {what}{reason}."


def answerable(calls: list[dict[str, Any]]) -> bool:
    """Whether an "approve"/"deny" message decides every waiting call (tool calls and mode changes; an
    MCP server's question or a connection to make waits for the browser)."""
    return bool(calls) and all(call["kind"] in ANSWERABLE_KINDS for call in calls)


def waiting_message(turn: Turn, calls: list[dict[str, Any]], site: str) -> Message:
    """What an input-required task waits for: the questions and how to answer (or, for what only the
    browser can answer, where), and the calls as data."""
    if answerable(calls):
        text = " ".join(_question(call) for call in calls) + ' Answer "approve" or "deny" on this task.'
    else:
        link = site + reverse("session-detail", args=[turn.session_id])
        text = f"The turn waits for an answer only the browser can give: {link}"
    approvals = [
        {
            "toolCallId": call["id"],
            "tool": call["name"],
            "kind": call["kind"],
            "arguments": call["arguments"],
            "reason": call.get("reason") or None,
        }
        for call in calls
    ]
    return Message(
        message_id=f"{turn.id}-waiting",
        context_id=turn.session_id,
        task_id=turn.id,
        role=Role.ROLE_AGENT,
        parts=[Part(text=text), Part(data=_value({"approvals": approvals}))],
    )


def _value(data: Any) -> Value:
    return ParseDict(data, Value())


def absolute(text: str, site: str) -> str:
    """The answer's links to this site's paths made absolute: the client is not on the site."""
    return SITE_LINK.sub(lambda match: f"]({site}{match.group(1)})", text)


def answer_id(task_id: str) -> str:
    return f"{task_id}-{ANSWER}"


def answer_artifact(turn: Turn, site: str, task_id: str) -> Artifact:
    """The task's answer: the turn's, as Markdown with the site's links made absolute."""
    return Artifact(
        artifact_id=answer_id(task_id),
        name=ANSWER,
        parts=[Part(text=absolute(turn.answer or "", site), media_type="text/markdown")],
    )


def status_of(turn: Turn, site: str) -> TaskStatus:
    """The task's status: its state and, where there is something to say, a message saying it."""
    state = STATE_OF_STATUS.get(Status(turn.status), TaskState.TASK_STATE_WORKING)
    status = TaskStatus(state=state)
    status.timestamp.FromDatetime(turn.finished_at or turn.started_at or turn.created_at)
    if turn.status == Status.AWAITING_APPROVAL:
        status.message.CopyFrom(waiting_message(turn, awaiting(turn), site))
    elif state in (TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED) and (
        turn.error or turn.status != Status.CANCELLED
    ):
        text = turn.error or f"The turn ended {turn.status}."
        status.message.CopyFrom(
            Message(
                message_id=f"{turn.id}-status",
                context_id=turn.session_id,
                task_id=turn.id,
                role=Role.ROLE_AGENT,
                parts=[Part(text=text)],
            )
        )
    return status


def working(first: Turn, text: str) -> TaskStatus:
    """A `working` status saying what the turn does now (a tool it calls)."""
    message = Message(
        message_id=f"{first.id}-{uuid.uuid4().hex}",
        context_id=first.session_id,
        task_id=first.id,
        role=Role.ROLE_AGENT,
        parts=[Part(text=text)],
    )
    return TaskStatus(state=TaskState.TASK_STATE_WORKING, message=message)


def task_of(chain: Sequence[Turn], site: str) -> Task:
    """The task of a turn and the turns that continued it: the first's id, the last's state."""
    first, last = chain[0], effective(chain)
    task = Task(id=first.id, context_id=first.session_id, status=status_of(last, site))
    task.metadata.CopyFrom(_struct({"turnId": last.id, "mode": last.response_mode or last.mode, "status": last.status}))
    task.history.append(
        Message(
            message_id=f"{first.id}-request",
            context_id=first.session_id,
            task_id=first.id,
            role=Role.ROLE_USER,
            parts=[Part(text=first.user_message or "")],
        )
    )
    if last.status == Status.COMPLETED:
        task.artifacts.append(answer_artifact(last, site, first.id))
    return task


def decision_of(message: Message) -> bool:
    """Whether a follow-up message approves (True) or denies (False) what its task waits for: a data
    part `{"decision": …}` first, else the text. Anything else is an InvalidParamsError saying how."""
    for data in get_data_parts(list(message.parts)):
        if isinstance(data, dict) and isinstance(data.get("decision"), str):
            word = data["decision"].strip().lower()
            if word in APPROVE | DENY:
                return word in APPROVE
    words = " ".join(get_text_parts(list(message.parts))).strip().lower().rstrip(".!")
    if words in APPROVE | DENY:
        return words in APPROVE
    raise InvalidParamsError(ERROR_DECISION)


def text_of(message: Message) -> str:
    return "\n".join(get_text_parts(list(message.parts))).strip()
