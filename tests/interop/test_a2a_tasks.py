"""A turn as an A2A task's parts that need no run: what a follow-up message decides, and what an
input-required task says when only the browser can answer it (an MCP server's question)."""

from __future__ import annotations

import pytest
from a2a.types.a2a_pb2 import Message, Part, Role
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Value

from agents.models import Turn
from interop.a2a.tasks import ERROR_DECISION, decision_of, waiting_message

SESSION = "5" * 32


def follow_up(text: str = "", data=None) -> Message:
    parts = [Part(text=text)] if text else []
    if data is not None:
        parts.append(Part(data=ParseDict(data, Value())))
    return Message(message_id="m", role=Role.ROLE_USER, parts=parts)


@pytest.mark.parametrize(
    "message, approve",
    [
        (follow_up("approve"), True),
        (follow_up(" Yes! "), True),
        (follow_up("Deny."), False),
        (follow_up(data={"decision": "approve"}), True),
        (follow_up("approve", data={"decision": "deny"}), False),  # the data part comes first
    ],
)
def test_a_follow_up_approves_or_denies(message, approve):
    assert decision_of(message) is approve


@pytest.mark.parametrize(
    "message", [follow_up("approve it, but only the first"), follow_up(data={"decision": "maybe"})]
)
def test_anything_else_says_how_to_answer(message):
    with pytest.raises(InvalidParamsError) as refused:
        decision_of(message)
    assert refused.value.message == ERROR_DECISION


def test_what_only_the_browser_can_answer_links_the_session():
    turn = Turn(id="7" * 32, session_id=SESSION)
    question = {"id": "call_1", "name": "github__create_issue", "kind": "elicitation", "arguments": "{}", "reason": ""}
    message = waiting_message(turn, [question], "https://aptix.example")
    assert message.parts[0].text == (
        f"The turn waits for an answer only the browser can give: https://aptix.example/sessions/{SESSION}/"
    )
    assert MessageToDict(message.parts[1].data)["approvals"][0]["kind"] == "elicitation"
