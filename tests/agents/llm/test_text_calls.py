"""Tool calls a model wrote as its reply's text (agents/llm/text_calls.py): taken as the call when the
whole reply is calls of offered tools, bare, fenced or between tags; anything else stays an answer.
And in a run: the written call runs, the text streamed for it goes (model.retry "text_tool_call")."""

from __future__ import annotations

import json

import pytest

from agents.llm.text_calls import text_tool_calls
from tests.helpers import async_db
from tests.helpers.events import events_of

OFFERED = {"knowledge_search", "agent_list_modes"}
SEARCH = {"query": "hotels", "top_k": 5}


def calls(content: str) -> list[tuple[str, dict]]:
    return [(c.name, json.loads(c.arguments)) for c in text_tool_calls(content, OFFERED)]


@pytest.mark.parametrize(
    "content",
    [
        '{"name": "knowledge_search", "arguments": {"query": "hotels", "top_k": 5}}',
        # as Qwen2.5-Coder 1.5B wrote it on llama.cpp: between tags, the closing one left out
        '<tool_response>\n{\n  "name": "knowledge_search",\n  "arguments": {\n    "query": "hotels",\n'
        '    "top_k": 5\n  }\n}\n',
        '<tool_call>{"name": "knowledge_search", "arguments": {"query": "hotels", "top_k": 5}}</tool_call>',
        '```json\n{"name": "knowledge_search", "arguments": "{\\"query\\": \\"hotels\\", \\"top_k\\": 5}"}\n```',
        '<tool_call>\n```json\n{"name": "knowledge_search", "parameters": {"query": "hotels", "top_k": 5}}'
        "\n```\n</tool_call>",
    ],
)
def test_a_call_written_out_is_taken_as_the_call(content):
    assert calls(content) == [("knowledge_search", SEARCH)]


def test_several_calls_written_as_a_list():
    content = (
        '[{"name": "agent_list_modes", "arguments": {}}, {"name": "knowledge_search", "arguments": {"query": "x"}}]'
    )
    assert calls(content) == [("agent_list_modes", {}), ("knowledge_search", {"query": "x"})]
    assert len({c.id for c in text_tool_calls(content, OFFERED)}) == 2  # each its own id


@pytest.mark.parametrize(
    "content",
    [
        'Here is the call: {"name": "knowledge_search", "arguments": {"query": "hotels"}}',  # text around it
        '{"name": "files_query", "arguments": {"sql": "select 1"}}',  # a tool not offered
        '[{"name": "agent_list_modes", "arguments": {}}, {"name": "files_query", "arguments": {}}]',
        '{"name": "knowledge_search", "arguments": "not json"}',
        '{"name": "knowledge_search", "arguments": [1, 2]}',
        '{"region": "West", "revenue": 93000}',  # an answer that happens to be JSON
        "The hotels budget is 180 euros a night.",
        "",
    ],
)
def test_anything_else_stays_an_answer(content):
    assert text_tool_calls(content, OFFERED) == []


@async_db
async def test_a_run_calls_the_tool_the_model_wrote_out(make_session, run_turn, model):
    session = await make_session(execution="agent")
    model.reply('<tool_call>\n{"name": "agent_list_modes", "arguments": {}}\n</tool_call>')
    model.reply("There are four modes.")
    turn = await run_turn(session, "Which modes are there?")
    assert turn.status == "completed" and turn.answer == "There are four modes."
    [retry] = await events_of(turn, "model.retry")
    assert retry["reason"] == "text_tool_call"
    [result] = await events_of(turn, "tool.result")
    assert result["name"] == "agent_list_modes" and "general" in result["result"]
    first, second = model.requests[-2:]
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "agent_list_modes"
    assert second["messages"][-2]["content"] in ("", None)  # the written-out call is not sent back as text
    assert "tools" in first
