"""The spans of a run (aptix/tracing.py sets tracing up; everything here is a no-op without it).

A turn is one trace, whichever processes it passes through. The request that first dispatches a
turn's run stores its span's W3C `traceparent` on the turn (`Turn.traceparent`, in the database,
so Admin → Turns shows the trace id and a later run of the same turn — resumed after an approval
or client tool results, re-queued after its worker died — continues that trace, linking the request
that resumed it). With workers the traceparent and the time the run was queued travel in the run
queue's entry (agents/run/queue.py); the worker that claims the run opens the turn's span
(`invoke_agent <mode>`, GenAI conventions) from the moment it was queued, with two child spans that
say where the wait went: `queue.wait` (queued → a worker read it) and `run.claim` (read → claimed in
the database). Inside it are the model calls (`chat <model>`, agents/llm/spans.py) and the tool
calls (`execute_tool <name>`, `tool_span`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Link, Span, SpanKind, StatusCode

from aptix import tracing
from tools.base import InvokeResult

from ..models import Turn
from .pipeline import MCP_SEPARATOR

logger = logging.getLogger("aptix.tracing")


@dataclass(frozen=True)
class TurnTrace:
    """Where a run's span hangs: the turn's trace (`parent`, a traceparent), the request that
    dispatched this run if it is another one (`link`), and, with workers, when the run was queued,
    read from the queue and claimed (ns since the epoch)."""

    parent: str = ""
    link: str = ""
    stored: bool = False  # `parent` is the one on the turn's row already (the web process looked)
    queued_at: int = 0
    read_at: int = 0
    claimed_at: int = 0


def local_trace() -> TurnTrace | None:
    """A run started in this process, by the current request (None: tracing is off)."""
    return TurnTrace(parent=tracing.current_traceparent()) if tracing.enabled() else None


async def queued_fields(turn_id: str, dispatching: str) -> dict[str, str]:
    """What the run queue's entry carries of the trace (nothing when tracing is off): the turn's
    traceparent (stored on the turn by its first dispatch), the dispatching request's, and the time."""
    if not tracing.enabled():
        return {}
    parent = await _stored_parent(turn_id, dispatching)
    fields = {"traceparent": parent, "queued_at": str(time.time_ns())}
    if dispatching and dispatching != parent:
        fields["trace_link"] = dispatching
    return fields


@contextmanager
def dispatch_span(traceparent: str) -> Iterator[Span]:
    """The span of putting a run on the queue (`send aptix:runs`, a producer): a task of its own,
    outside the request's context, so its parent is named (`traceparent`, the dispatching request)."""
    tracer = tracing.tracer()
    if tracer is None:
        yield INVALID_SPAN
        return
    attributes = {
        "messaging.system": "redis",
        "messaging.destination.name": "aptix:runs",
        "messaging.operation.type": "send",
    }
    context = tracing.context_of(traceparent)
    with tracer.start_as_current_span(
        "send aptix:runs", context=context, kind=SpanKind.PRODUCER, attributes=attributes
    ) as span:
        yield span


def claimed_trace(fields: dict[str, str], read_at: int) -> TurnTrace | None:
    """The trace of a run a worker read from the queue at `read_at` and has just claimed."""
    if not tracing.enabled():
        return None
    parent = fields.get("traceparent", "")
    queued_at = int(fields["queued_at"]) if fields.get("queued_at", "").isdigit() else 0
    return TurnTrace(
        parent=parent,
        link=fields.get("trace_link", ""),
        stored=bool(parent),
        queued_at=queued_at,
        read_at=read_at,
        claimed_at=time.time_ns(),
    )


@asynccontextmanager
async def turn_span(turn_id: str, turn_trace: TurnTrace | None) -> AsyncIterator[Span]:
    """The turn's span around its run, current inside the block (no-op without a trace)."""
    tracer = tracing.tracer()
    if tracer is None or turn_trace is None:
        yield INVALID_SPAN
        return
    parent, link = turn_trace.parent, turn_trace.link
    if not turn_trace.stored:
        parent = await _stored_parent(turn_id, turn_trace.parent)
        if turn_trace.parent and turn_trace.parent != parent:
            link = turn_trace.parent
    links = [Link(c) for c in [_span_context(link)] if c is not None]
    span = tracer.start_span(
        "invoke_agent",
        context=tracing.context_of(parent),
        links=links,
        start_time=turn_trace.queued_at or None,
        attributes={"gen_ai.operation.name": "invoke_agent", "aptix.turn.id": turn_id},
    )
    if not parent:  # nothing started this trace before: the turn's trace is this span's
        await _stored_parent(turn_id, _traceparent(span))
    if turn_trace.read_at:
        _interval(tracer, span, "queue.wait", turn_trace.queued_at or turn_trace.read_at, turn_trace.read_at)
        _interval(tracer, span, "run.claim", turn_trace.read_at, turn_trace.claimed_at or turn_trace.read_at)
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield span
    except BaseException as exc:
        span.record_exception(exc)
        span.set_status(StatusCode.ERROR, type(exc).__name__)
        raise
    finally:
        otel_context.detach(token)
        span.end()


def turn_ended(span: Span, turn: Turn) -> None:
    """How the run ended, on the turn's span."""
    if not span.is_recording():
        return
    span.update_name(f"invoke_agent {turn.mode}")
    span.set_attributes(
        {
            "gen_ai.agent.name": turn.mode,
            "gen_ai.conversation.id": str(turn.session_id),
            "aptix.turn.status": turn.status,
            "aptix.turn.execution": turn.execution,
            "gen_ai.usage.input_tokens": turn.prompt_tokens,
            "gen_ai.usage.output_tokens": turn.completion_tokens,
        }
    )
    if turn.model_label:
        span.set_attribute("gen_ai.request.model", turn.model_label)
    if turn.status == Turn.Status.FAILED:
        span.set_status(StatusCode.ERROR, (turn.error or "failed")[:200])


@contextmanager
def tool_span(name: str, call_id: str, kind: str | None, arguments: str) -> Iterator[Span]:
    """The span of one tool call the run executes (`execute_tool <name>`); `tool_outcome` ends its story."""
    if not tracing.enabled():
        yield INVALID_SPAN
        return
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "extension" if kind == "mcp" else "function",
        "aptix.tool.kind": kind or "unknown",
    }
    if kind == "mcp":
        attributes["aptix.mcp.server"] = name.partition(MCP_SEPARATOR)[0]
    if tracing.content_enabled():
        attributes["gen_ai.tool.call.arguments"] = arguments
    with tracing.span(f"execute_tool {name}", attributes=attributes) as span:
        yield span


def tool_outcome(span: Span, result: InvokeResult | None) -> None:
    """`ok`, `error` (the tool's error, or it was unavailable) or `stopped` (None: the turn was
    stopped while it ran)."""
    if not span.is_recording():
        return
    if result is None:
        span.set_attribute("aptix.tool.outcome", "stopped")
        return
    span.set_attribute("aptix.tool.outcome", "ok" if result.successful else "error")
    if not result.successful:
        span.set_status(StatusCode.ERROR, (result.error_message or "")[:200])
        span.set_attribute("error.type", "tool_error")
    if tracing.content_enabled():
        span.set_attribute("gen_ai.tool.call.result", json.dumps(result.content_for_model(), ensure_ascii=False))


# --- helpers ------------------------------------------------------------------------------------------


async def _stored_parent(turn_id: str, offered: str) -> str:
    """The turn's traceparent: `offered` if the turn had none (it is stored), else the stored one."""
    try:
        if offered and await Turn.objects.filter(pk=turn_id, traceparent="").aupdate(traceparent=offered):
            return offered
        return await Turn.objects.filter(pk=turn_id).values_list("traceparent", flat=True).afirst() or ""
    except Exception:  # tracing never fails a turn: its run goes on, traced from `offered`
        logger.warning("Could not store or read the trace of turn %s", turn_id, exc_info=True)
        return offered


def _span_context(traceparent: str) -> trace.SpanContext | None:
    context = tracing.context_of(traceparent)
    if context is None:
        return None
    found = trace.get_current_span(context).get_span_context()
    return found if found.is_valid else None


def _traceparent(span: Span) -> str:
    found = span.get_span_context()
    return f"00-{found.trace_id:032x}-{found.span_id:016x}-{int(found.trace_flags):02x}"


def _interval(tracer: trace.Tracer, parent: Span, name: str, start: int, end: int) -> None:
    child = tracer.start_span(name, context=trace.set_span_in_context(parent), start_time=start)
    child.end(end_time=max(start, end))
