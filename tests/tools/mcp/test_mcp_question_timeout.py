"""A question waiting for a person does not count against the tool's call timeout: a server that asks
during a call on a 1 s timeout gets the answer given after 2 s, and the call's own time limit runs
again from the answer; both for a 2026-07-28 multi round-trip (our ask server) and a handshake-era
server's own `elicitation/create` request (the reference `everything` server). A call that then
runs out of its time after the answer says that its time ran from the answer (an mcp 1.30 server)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.everything import everything_server
from tests.helpers.mcp import ready_host
from tests.helpers.sdk1 import sdk1_entry
from tools.base import CallContext
from tools.mcp.elicitation import Answer, Asker, Request
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers)

ASK = Path(__file__).with_name("ask_server.py")
PERSON_TAKES = 2.0  # seconds the person takes to answer: twice the call timeout


async def answered_late(tmp_path, name: str, entry: dict, tool: str, content: dict) -> tuple[Any, list[Request]]:
    """Call `tool` of server `name` (`entry`, on a 1 s call timeout) for a person who answers its
    question after PERSON_TAKES seconds."""
    registry = ToolRegistry("mcp")
    with ready_host(tmp_path, {name: {**entry, "timeout": 1, "initTimeout": 60}}, registry=registry):
        asked: list[Request] = []

        async def slow_person(request: Request) -> Answer:
            asked.append(request)
            await asyncio.sleep(PERSON_TAKES)  # a person reading the card and typing, past the call timeout
            return Answer("accept", content)

        context = CallContext.of(None, asker=Asker.here(slow_person))
        return await registry.get(tool).execute("{}", context), asked


async def test_an_answer_after_the_call_timeout_still_reaches_the_server(tmp_path):
    entry = {"command": sys.executable, "args": [str(ASK)]}
    result, asked = await answered_late(tmp_path, "ask", entry, "ask__profile", {"name": "Ada"})
    assert [request.message for request in asked] == ["Tell me about you"]
    assert result.successful, result.error_message
    assert result.result == "accept {'name': 'Ada'}"


async def test_a_handshake_era_servers_question_answered_late_too(tmp_path):
    entry = {"command": "node", "args": [str(everything_server()), "stdio"]}
    tool = "everything__trigger-elicitation-request"
    result, asked = await answered_late(tmp_path, "everything", entry, tool, {"name": "Ada Lovelace"})
    assert len(asked) == 1
    assert result.successful, result.error_message
    assert "Name: Ada Lovelace" in result.result


async def test_a_timeout_after_the_answer_says_the_time_ran_from_the_answer(tmp_path):
    registry = ToolRegistry("mcp")
    with ready_host(tmp_path, {"old": sdk1_entry(timeout=1, initTimeout=60)}, registry=registry):

        async def person(request: Request) -> Answer:
            await asyncio.sleep(PERSON_TAKES)  # past the call timeout: not counted
            return Answer("accept", {"name": "Ada"})

        context = CallContext.of(None, asker=Asker.here(person))
        result = await registry.get("old__ask").execute('{"then_sleep": 5}', context)  # silent past its 1 s
    assert not result.successful
    assert result.error_message == (
        'MCP tool "old__ask" timed out after 1 s since its question was answered '
        "(the time the question waited is not counted)"
    )
