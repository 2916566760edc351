"""Tools and results that fit the model's context, through the JSON API with a scripted model: 300
read-only MCP tools are found on demand with tool_search when their schemas do not fit; a 5 MB
result is cut to what the context has room for; a turn fails for context only when its pinned parts
do not fit, naming them; the offline model searches when the tool it wants is not offered."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.llm.offline.planner import plan_reply
from agents.models import Turn
from agents.run.pipeline import schema_tokens
from aptix.tokens import api_token_create
from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.events import events_of
from tools.base import InvokeResult, function_schema
from tools.builtin.tool_search import Found, ToolSearchTool, rank
from tools.registry import mcp_registry, validate_tool_contract

pytestmark = async_db

URL = "/api/v1/agent/execute"
TOPICS = ("invoice", "shipment", "ticket", "calendar", "weather", "repository", "wiki", "payroll", "crm", "alert")


class ArchiveTool:
    """One of 300 read-only stand-in MCP tools with realistic schemas (about 60 tokens each)."""

    TOOL_USAGE_METADATA = "A stand-in."
    is_tool_fully_executed_on_server = True
    read_only = True
    annotations = None

    def __init__(self, index: int) -> None:
        topic = TOPICS[index % len(TOPICS)]
        self.TOOL_NAME = f"{topic}__op_{index:03d}"
        self.description = f"Looks up {topic} records by id or date range and returns a table (variant {index})."

    def get_schema(self):
        return function_schema(
            self.TOOL_NAME,
            self.description,
            {
                "id": {"type": "string", "description": "the record's id"},
                "since": {"type": "string", "description": "ISO date: records from this day on"},
            },
        )

    async def execute(self, arguments_json, context):
        return InvokeResult.create(f"{self.TOOL_NAME} ran")


class HugeTool(ArchiveTool):
    def __init__(self) -> None:
        super().__init__(0)
        self.TOOL_NAME = "db__dump"

    async def execute(self, arguments_json, context):
        return InvokeResult.create("row,value\n" * 500_000)  # 5 MB


@pytest.fixture
def many_tools():
    tools = [ArchiveTool(i) for i in range(300)]
    for tool in tools:
        mcp_registry.register(tool)
    yield tools
    for tool in tools:
        mcp_registry.unregister(tool.TOOL_NAME)


@pytest.fixture
async def everything():
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])


@pytest.fixture
async def token(alice):
    _, secret = await sync_to_async(api_token_create)(user=alice, name="ci")
    return secret


async def post(body, token):
    response = await ServerLikeAsyncClient().post(
        URL, data=json.dumps(body), content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )
    return response.status_code, json.loads(response.content)


def offered(request) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


async def test_hello_with_300_tools_and_8000_tokens_completes_offering_tool_search(
    llm, model, token, many_tools, everything, settings
):
    settings.APTIX_CONTEXT_TOKENS = 8_000
    model.reply("Hello!")
    status, body = await post({"message": "hello", "execution": "agent"}, token)
    assert status == 200 and body["status"] == "completed", body
    names = offered(model.requests[0])
    assert "tool_search" in names and not any(n.endswith("__op_000") for n in names)
    assert schema_tokens(model.requests[0]["tools"]) <= 0.35 * 8_000
    turn = await Turn.objects.aget(pk=body["turnId"])
    [started] = await events_of(turn, "turn.started")
    assert len(started["tools_on_demand"]) == 300 and started["tool_kinds"]["tool_search"] == "internal"


async def test_the_model_searches_then_calls_a_found_tool_which_runs(
    llm, model, token, many_tools, mcp_sql_tool, everything, settings
):
    """The ten 30-tool servers do not fit the context, so their tools are on demand; the one-tool
    "sql" server fits whole and is offered from the start."""
    settings.APTIX_CONTEXT_TOKENS = 8_000
    model.reply("", tool_calls=[("tool_search", {"query": "payroll records, variant 7"})])
    model.reply("", tool_calls=[("payroll__op_007", {"id": "p-1"})])
    model.reply("Found it.")
    status, body = await post({"message": "find payroll record p-1", "execution": "agent"}, token)
    assert status == 200 and body["status"] == "completed" and body["answer"] == "Found it.", body
    assert "sql__query" in offered(model.requests[0])
    assert "payroll__op_007" not in offered(model.requests[0]) and "payroll__op_007" in offered(model.requests[1])
    found = json.loads(model.requests[1]["messages"][-1]["content"])
    assert found["tools"][0]["name"] == "payroll__op_007" and found["tools"][0]["server"] == "payroll"
    assert model.requests[2]["messages"][-1]["content"] == "payroll__op_007 ran"  # it ran
    # The next turn of the session offers the found tool from its first request (remembered).
    model.reply("Again.")
    status, body = await post({"conversationId": body["conversationId"], "message": "and now?"}, token)
    names = offered(model.requests[3])
    assert status == 200 and "payroll__op_007" in names and "tool_search" in names


async def test_a_search_that_finds_nothing_says_so_and_lists_the_servers(
    llm, model, token, many_tools, everything, settings
):
    settings.APTIX_CONTEXT_TOKENS = 8_000
    model.reply("", tool_calls=[("tool_search", {"query": "quantum teleportation"})])
    model.reply("Nothing fits.")
    status, body = await post({"message": "teleport me", "execution": "agent"}, token)
    assert status == 200 and body["status"] == "completed"
    result = json.loads(model.last_messages[-1]["content"])
    assert result["tools"] == [] and "No tool matches" in result["message"]
    assert result["servers"] == sorted(TOPICS)


async def test_a_5_mb_result_in_a_16000_token_context_completes_cut_to_fit(llm, model, token, everything, settings):
    settings.APTIX_CONTEXT_TOKENS = 16_000
    mcp_registry.register(HugeTool())
    try:
        model.reply("", tool_calls=[("db__dump", {})])
        model.reply("It is big.")
        status, body = await post({"message": "dump it", "execution": "agent"}, token)
    finally:
        mcp_registry.unregister("db__dump")
    assert status == 200 and body["status"] == "completed", body
    sent = model.last_messages[-1]["content"]
    assert "it is 5,000,000 characters and you got the first" in sent and "asking for less" in sent
    turn = await Turn.objects.aget(pk=body["turnId"])
    [result] = await events_of(turn, "tool.result")
    assert result["size"] == 5_000_000 and result["cut_for_model"] < settings.APTIX_TOOL_RESULT_CHARS


async def test_a_context_that_cannot_hold_the_pinned_parts_fails_naming_them(llm, model, token, settings):
    settings.APTIX_CONTEXT_TOKENS = 1_000
    status, body = await post({"message": "word " * 2_000, "execution": "agent"}, token)
    assert status == 200 and body["status"] == "failed" and model.calls == 0
    turn = await Turn.objects.aget(pk=body["turnId"])
    assert "does not fit the model's context" in turn.error
    for part in ("your message", "the system prompt", "the tools ("):
        assert part in turn.error
    assert turn.error.index("your message") < turn.error.index("the system prompt")  # biggest first


async def test_when_everything_fits_no_tool_search_is_offered(llm, model, token, mcp_sql_tool, everything):
    model.reply("Hi.")
    status, body = await post({"message": "hello", "execution": "agent"}, token)
    assert status == 200 and body["status"] == "completed"
    names = offered(model.requests[0])
    assert "sql__query" in names and "tool_search" not in names


async def test_older_steps_of_the_turn_are_summarised_before_the_turn_fails(llm, model, token, everything, settings):
    settings.APTIX_CONTEXT_TOKENS = 16_000
    mcp_registry.register(HugeTool())
    try:
        model.reply("", tool_calls=[("db__dump", {"id": "1"})])
        model.reply("", tool_calls=[("db__dump", {"id": "2"})])
        model.reply("", tool_calls=[("db__dump", {"id": "3"})])
        model.reply("Done.")
        status, body = await post({"message": "dump three times", "execution": "agent"}, token)
    finally:
        mcp_registry.unregister("db__dump")
    assert status == 200 and body["status"] == "completed", body
    results = [m["content"] for m in model.last_messages if m["role"] == "tool"]
    assert results[0].startswith("[Aptix summarised this earlier result") and "it is 5,000,000" in results[-1]


def test_tool_search_meets_the_tool_contract_and_ranks_by_words():
    assert validate_tool_contract(ToolSearchTool) == "tool_search"
    catalog = [
        Found("notes__add_note", "notes", "Add a note."),
        Found("sql__list_tables", "sql", "List the tables."),
        Found("sql__query", "sql", "Run a read-only SQL query."),
    ]
    assert [f.name for f in rank(catalog, "run a query on the orders table", 8)][:1] == ["sql__query"]
    assert rank(catalog, "zebra", 8) == []


async def test_the_offline_model_searches_for_the_database_tools_then_queries():
    search = ToolSearchTool.get_schema()
    body = {
        "messages": [
            {"role": "system", "content": "Current mode: data-analysis\nExecution: agent"},
            {"role": "user", "content": "how many orders are there?"},
        ],
        "tools": [search],
    }
    first = await plan_reply(body, modes=[])
    assert [c.name for c in first.tool_calls] == ["tool_search"]
    call = first.tool_calls[0]
    found = {"tools": [{"name": "sql__query", "server": "sql", "description": "Run SQL."}]}
    body["messages"] += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(found)},
    ]
    body["tools"] = [search, function_schema("sql__query", "Run SQL.", {"sql": {"type": "string"}}, ["sql"])]
    second = await plan_reply(body, modes=[])
    assert [c.name for c in second.tool_calls] == ["sql__query"]
    assert "count" in json.loads(second.tool_calls[0].arguments)["sql"].lower()


async def test_an_allowed_tool_named_without_a_search_is_offered_and_runs(
    llm, model, token, many_tools, mcp_sql_tool, everything, settings
):
    """A model that knows an on-demand tool's name (from an earlier turn, say) may call it directly:
    it is allowed, so it runs and is offered from then on, rather than being refused as unknown."""
    settings.APTIX_CONTEXT_TOKENS = 8_000
    model.reply("", tool_calls=[("sql__query", {"sql": "SELECT 1"})])
    model.reply("One.")
    status, body = await post({"message": "select one", "execution": "agent"}, token)
    assert status == 200 and body["status"] == "completed", body
    assert mcp_sql_tool.calls == ['{"sql": "SELECT 1"}'] and "sql__query" in offered(model.requests[1])
