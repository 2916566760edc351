"""A turn is one trace across processes: the web process's request span (with the recording of the
turn and the send to the run queue under it), and in a real
`aptix_worker` subprocess the turn's span (from the moment the run was queued, its wait in the queue
and its claim as child spans) and the model call with its GenAI attributes, joined by the
traceparent that travels in the run queue's entry (Redis) and on the turn (PostgreSQL). Both
processes export over OTLP/HTTP to one receiver in this test."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator

from agents.models import Turn
from aptix import tracing
from aptix.asgi import router
from aptix.tokens import api_token_create
from tests.helpers import async_db
from tests.helpers.deployment import Worker, worker_env
from tests.helpers.otlp import OtlpReceiver, by_name, tracer_provider
from tests.helpers.scripted_model import ScriptedModel, loopback_server
from tests.helpers.worker_process import HEARTBEAT, REDIS_URL

pytestmark = [pytest.mark.slow, async_db]


def _complete(spans) -> bool:
    names = {s.name.split(" ")[0] for s in spans}
    return {"POST", "turn.record", "send", "invoke_agent", "queue.wait", "run.claim", "chat"} <= names


async def test_an_api_turn_run_by_a_worker_is_one_trace_across_the_processes(redis_layer, alice, tmp_path, settings):
    settings.APTIX_RUN_HEARTBEAT = HEARTBEAT
    model = ScriptedModel()
    model.reply("Hello from a worker.")
    _, secret = await sync_to_async(api_token_create)(user=alice)
    with OtlpReceiver() as receiver:
        async with loopback_server(model) as url:
            env = worker_env(
                url,
                REDIS_URL,
                OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
                OTEL_BSP_SCHEDULE_DELAY="50",  # export within 50 ms, not the default 5 s
                APTIX_RUN_HEARTBEAT=str(HEARTBEAT),
                APTIX_LLM_MODEL="asked-model",
            )
            worker = Worker(model, env, tmp_path / "worker.log")
            try:
                with tracing.use_tracer_provider(tracer_provider(receiver, kind="web")):
                    communicator = HttpCommunicator(
                        tracing.TracingMiddleware(router),
                        "POST",
                        "/api/v1/agent/execute",
                        body=json.dumps({"message": "Hi", "execution": "ask"}).encode(),
                        headers=[
                            (b"host", b"localhost"),
                            (b"content-type", b"application/json"),
                            (b"authorization", f"Bearer {secret}".encode()),
                        ],
                    )
                    response = await communicator.get_response(timeout=60)  # the worker starts meanwhile
                    await communicator.wait(timeout=5)
                assert response["status"] == 200, response["body"]
                body = json.loads(response["body"])
                assert body["answer"] == "Hello from a worker." and model.calls == 1  # the worker called the model
                spans = await receiver.wait_for(_complete)
            finally:
                await worker.stop()
    log = (tmp_path / "worker.log").read_text()

    (request,) = by_name(spans, "POST")
    (recorded,) = by_name(spans, "turn.record")
    (sent,) = by_name(spans, "send aptix:runs")
    (turn_span,) = by_name(spans, "invoke_agent")
    (waited,) = by_name(spans, "queue.wait")
    (claim,) = by_name(spans, "run.claim")
    (chat,) = by_name(spans, "chat ")
    assert {s.trace_id for s in spans} == {request.trace_id}, log  # one trace, two processes
    assert {s.resource["aptix.process.kind"] for s in (request, recorded, sent)} == {"web"}
    assert {s.resource["aptix.process.kind"] for s in (turn_span, waited, claim, chat)} == {"worker"}
    assert recorded.parent_span_id == sent.parent_span_id == request.span_id
    assert sent.kind == "producer" and sent.attributes["messaging.destination.name"] == "aptix:runs"
    assert turn_span.parent_span_id == sent.span_id  # the hop through the queue kept the parent
    assert waited.parent_span_id == claim.parent_span_id == chat.parent_span_id == turn_span.span_id
    # The turn's span starts when the web process queued the run: queued → read → claimed → running.
    assert turn_span.start == waited.start <= waited.end == claim.start <= claim.end <= chat.start
    assert recorded.end <= sent.start <= turn_span.start <= sent.end  # queued at the end of the send
    assert turn_span.end <= request.end  # the API waited for the turn
    assert turn_span.attributes["aptix.turn.status"] == "completed"
    assert chat.name == "chat asked-model"
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == chat.attributes["gen_ai.response.model"] == "asked-model"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0 and chat.attributes["gen_ai.usage.output_tokens"] > 0
    assert "gen_ai.input.messages" not in chat.attributes  # no content without APTIX_TRACE_CONTENT
    turn = await Turn.objects.aget(pk=body["turnId"])
    assert tracing.trace_id_of(turn.traceparent) == request.trace_id
