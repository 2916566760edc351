"""A turn's spans in one process (the embedded runner): the request's span, the turn's under it, and
under that each model call (`chat <model>` with the GenAI attributes) and tool call (`execute_tool
<name>` with its MCP server and outcome), all in one trace whose id the turn stores; what was said
reaches a span only with APTIX_TRACE_CONTENT. Exported over OTLP/HTTP to a receiver in this test,
decoded with opentelemetry-proto. (Across a worker process: tests/agents/deployment/test_traces.py.)"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator

from agents.models import Turn
from agents.run.spans import queued_fields
from agents.turns import turn_start
from aptix import tracing
from aptix.asgi import router
from aptix.tokens import api_token_create
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.otlp import OtlpReceiver, by_name, tracer_provider

pytestmark = async_db
QUERY = {"sql": "select count(*) from orders"}


@pytest.fixture
def receiver():
    with OtlpReceiver() as started:
        yield started


async def _execute(alice, message: str, headers: list | None = None) -> dict:
    _, secret = await sync_to_async(api_token_create)(user=alice)
    communicator = HttpCommunicator(
        tracing.TracingMiddleware(router),
        "POST",
        "/api/v1/agent/execute",
        body=json.dumps({"message": message, "execution": "agent"}).encode(),
        headers=[
            (b"host", b"localhost"),
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {secret}".encode()),
            *(headers or []),
        ],
    )
    response = await communicator.get_response(timeout=30)
    await communicator.wait(timeout=5)  # the application returned: the request's span has ended
    assert response["status"] == 200, response["body"]
    return json.loads(response["body"])


@pytest.mark.parametrize("content", [False, True], ids=["without-content", "with-trace-content"])
async def test_an_api_turn_is_one_trace_from_the_request_down_to_its_model_and_tool_calls(
    alice, llm, model, mcp_sql_tool, receiver, content
):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    model.reply("", tool_calls=[("sql__query", QUERY)])
    model.reply("There are 10 orders.")
    with tracing.use_tracer_provider(tracer_provider(receiver), content=content):
        body = await _execute(alice, "How many orders?")
    assert body["status"] == "completed"
    spans = await receiver.wait_for(lambda s: len(by_name(s, "POST")) == 1)

    (request,) = by_name(spans, "POST")
    (turn_span,) = by_name(spans, "invoke_agent")
    chats = by_name(spans, "chat ")
    (tool,) = by_name(spans, "execute_tool")
    assert request.name == "POST api/v1/agent/execute" and request.kind == "server"
    assert request.attributes["http.route"] == "api/v1/agent/execute"
    assert request.attributes["http.response.status_code"] == 200
    assert {s.trace_id for s in spans} == {request.trace_id}  # one trace
    assert turn_span.parent_span_id == request.span_id
    assert turn_span.name == "invoke_agent general"
    assert turn_span.attributes["aptix.turn.id"] == body["turnId"]
    assert turn_span.attributes["aptix.turn.status"] == "completed"
    assert turn_span.attributes["gen_ai.operation.name"] == "invoke_agent"

    assert [c.parent_span_id for c in chats] == [turn_span.span_id] * 2
    first, second = chats
    assert first.name == "chat scripted-model" and first.kind == "client"
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.model"] == "scripted-model"
    assert first.attributes["gen_ai.response.model"] == "scripted-model"
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert second.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert first.attributes["gen_ai.usage.input_tokens"] > 0 and second.attributes["gen_ai.usage.output_tokens"] > 0

    assert tool.name == "execute_tool sql__query" and tool.parent_span_id == turn_span.span_id
    assert tool.attributes["gen_ai.tool.name"] == "sql__query"
    assert tool.attributes["aptix.mcp.server"] == "sql" and tool.attributes["aptix.tool.outcome"] == "ok"

    said = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")
    carried = [key for s in spans for key in said if key in s.attributes]
    if content:
        assert "How many orders?" in first.attributes["gen_ai.input.messages"]
        assert "There are 10 orders." in second.attributes["gen_ai.output.messages"]
        assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == QUERY
        assert "2026-01" in tool.attributes["gen_ai.tool.call.result"]
    else:
        assert carried == []  # nothing the user or the model said
        assert not any("How many orders" in str(v) for s in spans for v in s.attributes.values())

    turn = await Turn.objects.aget(pk=body["turnId"])
    assert tracing.trace_id_of(turn.traceparent) == request.trace_id  # what Admin → Turns shows


async def test_a_caller_s_traceparent_is_continued(alice, llm, model, receiver):
    model.reply("Hi.")
    caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with tracing.use_tracer_provider(tracer_provider(receiver)):
        await _execute(alice, "Hello", headers=[(b"traceparent", caller.encode())])
    spans = await receiver.wait_for(lambda s: len(by_name(s, "POST")) == 1)
    (request,) = by_name(spans, "POST")
    assert request.trace_id == "0af7651916cd43dd8448eb211c80319c" and request.parent_span_id == "b7ad6b7169203331"


async def test_a_turn_keeps_the_trace_of_its_first_dispatch_and_links_a_later_one(make_session, receiver):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hello")
    first = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    later = "00-11111111111111111111111111111111-2222222222222222-01"
    with tracing.use_tracer_provider(tracer_provider(receiver)):
        queued = await queued_fields(turn.id, first)
        again = await queued_fields(turn.id, later)  # resumed by another request: same trace, linked
        requeued = await queued_fields(turn.id, "")  # re-queued by a sweep, outside any request
    assert queued["traceparent"] == first and "trace_link" not in queued and int(queued["queued_at"]) > 0
    assert again["traceparent"] == first and again["trace_link"] == later
    assert requeued["traceparent"] == first and "trace_link" not in requeued
    assert (await Turn.objects.aget(pk=turn.id)).traceparent == first
    assert await queued_fields(turn.id, later) == {}  # tracing off: nothing carried, nothing read


async def test_without_tracing_a_turn_makes_no_span_and_stores_no_trace(alice, llm, model, receiver):
    model.reply("Hi.")
    body = await _execute(alice, "Hello")
    assert (await Turn.objects.aget(pk=body["turnId"])).traceparent == ""
    assert receiver.posts == 0


@pytest.mark.django_db
def test_the_version_before_can_still_insert_turns_once_the_trace_column_is_migrated(team_a, alice):
    """A rolling upgrade migrates while the old processes still run: their INSERTs name no
    `traceparent`, which the database then fills with its own default."""
    from django.db import connection

    from agents.sessions import session_create

    session = session_create(team=team_a, user=alice)
    turn = turn_start(session=session, text="Hello")
    columns = [f.column for f in Turn._meta.concrete_fields if f.column not in ("id", "index", "traceparent")]
    listed = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f'INSERT INTO agents_turn ({listed}, "id", "index") '  # column names from the model, no input
            f'SELECT {listed}, %s, "index" + 1 FROM agents_turn WHERE "id" = %s',
            ["f" * 32, turn.id],
        )
    assert Turn.objects.get(pk="f" * 32).traceparent == ""


async def test_a_trace_the_database_cannot_store_does_not_fail_the_turn(alice, llm, model, receiver, monkeypatch):
    from django.db import DatabaseError

    class Unstorable:  # the turn rows as agents/run/spans.py sees them: every query fails
        Status = Turn.Status

        class objects:  # stands in for the manager
            @staticmethod
            def filter(**_lookups):
                raise DatabaseError("connection lost")

    monkeypatch.setattr("agents.run.spans.Turn", Unstorable)
    model.reply("Hi.")
    with tracing.use_tracer_provider(tracer_provider(receiver)):
        body = await _execute(alice, "Hello")
    assert body["status"] == "completed" and body["answer"] == "Hi."
    spans = await receiver.wait_for(lambda s: len(by_name(s, "POST")) == 1)
    (request,) = by_name(spans, "POST")
    (turn_span,) = by_name(spans, "invoke_agent")
    assert turn_span.parent_span_id == request.span_id  # traced from the request all the same


async def test_a_websocket_is_one_server_span_for_as_long_as_it_is_open(alice, make_session, receiver):
    from channels.testing import WebsocketCommunicator

    from aptix.asgi import application
    from tests.helpers.streams import ORIGIN, session_cookie

    session = await make_session()
    headers = [ORIGIN, (b"cookie", await session_cookie(alice))]
    with tracing.use_tracer_provider(tracer_provider(receiver)):
        communicator = WebsocketCommunicator(application, f"/ws/sessions/{session.id}/", headers=headers)
        connected, _ = await communicator.connect(timeout=30)  # this process's first socket runs its start-up
        assert connected
        assert receiver.posts == 0  # still open: its span has not ended
        await communicator.disconnect()
    (socket,) = await receiver.wait_for(lambda s: bool(by_name(s, "websocket")))
    assert socket.kind == "server" and socket.attributes["url.path"] == f"/ws/sessions/{session.id}/"
