"""The span of a model call (`chat <model>`), after OpenTelemetry's GenAI semantic conventions:
the operation, the model asked for and the one that answered, the token usage and the finish
reason. What was said (the messages sent, the answer) only with APTIX_TRACE_CONTENT=true. Tracing
off (aptix/tracing.py), `chat_span` yields a no-op span and the call pays one check."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace import INVALID_SPAN, Span, SpanKind

from aptix import tracing

from .reply import ModelError, ModelReply


@contextmanager
def chat_span(model: str, base_url: Any, messages: list[dict]) -> Iterator[Span]:
    """The span of one model step; a `ModelError` sets `error.type` to its kind."""
    if not tracing.enabled():
        yield INVALID_SPAN  # a no-op span
        return
    address = urlsplit(str(base_url))
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "server.address": address.hostname or "",
    }
    if address.port:
        attributes["server.port"] = address.port
    if tracing.content_enabled():
        attributes["gen_ai.input.messages"] = json.dumps(messages, default=str, ensure_ascii=False)
    with tracing.span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes) as span:
        try:
            yield span
        except ModelError as exc:
            span.set_attribute("error.type", exc.kind)
            raise


def record_reply(span: Span, reply: ModelReply) -> None:
    """What the model answered, on its span."""
    if not span.is_recording():
        return
    span.set_attribute("gen_ai.response.model", reply.response_model or "")
    span.set_attribute("gen_ai.usage.input_tokens", reply.prompt_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", reply.completion_tokens)
    if reply.finish_reason:
        span.set_attribute("gen_ai.response.finish_reasons", [reply.finish_reason])
    if reply.usage_estimated:
        span.set_attribute("aptix.usage_estimated", True)
    if tracing.content_enabled():
        output: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            output["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
        span.set_attribute("gen_ai.output.messages", json.dumps([output], ensure_ascii=False))
