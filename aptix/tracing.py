"""Traces: OpenTelemetry spans, exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

`configure(kind)` sets up this process's tracer provider (the serving processes call it as they
start: aptix/asgi.py for the web, the `aptix_worker` command for a worker). Without the endpoint it
does nothing: no provider, no exporter thread, and every helper here returns at its first line (a
no-op span), so tracing costs an attribute check where a span would start.

What makes spans here: `TracingMiddleware` (a span per HTTP request and websocket connection, an
incoming W3C `traceparent` continued), `RouteNaming` (names the request's span after its URL route),
`span` (any other span: the model call in agents/llm/client.py, the tool calls and the turn in
agents/run/spans.py), and `TraceIdFilter`, which puts the current trace id on every log record
(the structured JSON lines carry it as `trace_id`). A run moves between processes as text:
`current_traceparent()` on the sending side, `context_of()` on the receiving one.

Why our own ASGI middleware rather than opentelemetry-instrumentation-asgi: it is another package
with its own per-message wrappers (it wraps every `send` of a websocket, the live stream's hot
path), while a connection's span needs none of that; this one wraps `send` for HTTP only, to see
the status.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from aptix.startup import AsgiApp, Receive, Scope, Send

logger = logging.getLogger("aptix.tracing")
TRACER_NAME = "aptix"
_propagator = TraceContextTextMapPropagator()


class _State:
    tracer: Tracer | None = None  # None: tracing is off in this process
    content: bool = False  # APTIX_TRACE_CONTENT: prompts, completions and tool arguments on spans


_state = _State()


def enabled() -> bool:
    return _state.tracer is not None


def content_enabled() -> bool:
    """Whether spans may carry what was said (messages, completions, tool arguments and results)."""
    return _state.tracer is not None and _state.content


def configure(kind: str) -> bool:
    """Set up tracing for this process (`kind`: "web" or "worker", a resource attribute) if
    OTEL_EXPORTER_OTLP_ENDPOINT is set; True when it is on. Called again, it does nothing."""
    from django.conf import settings

    if _state.tracer is not None:
        return True
    if not settings.OTEL_EXPORTER_OTLP_ENDPOINT:
        return False
    # Imported only here: a process without the endpoint never loads the SDK.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": settings.OTEL_SERVICE_NAME, "aptix.process.kind": kind})
    provider = TracerProvider(resource=resource)
    # The exporter reads the endpoint (…/v1/traces appended), headers, timeout and compression from
    # the standard OTEL_EXPORTER_OTLP_* variables; the batch processor exports off the event loop.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)  # global too: instrumentation an operator adds finds it
    _state.tracer = provider.get_tracer(TRACER_NAME)
    _state.content = settings.APTIX_TRACE_CONTENT
    logger.info("Traces go to %s over OTLP/HTTP", settings.OTEL_EXPORTER_OTLP_ENDPOINT, extra={"event": "tracing.on"})
    return True


@contextmanager
def use_tracer_provider(provider: Any, *, content: bool = False) -> Iterator[None]:
    """Trace this process with `provider` (tests: one exporting to their own receiver)."""
    previous = _state.tracer, _state.content
    _state.tracer, _state.content = provider.get_tracer(TRACER_NAME), content
    try:
        yield
    finally:
        _state.tracer, _state.content = previous


def tracer() -> Tracer | None:
    return _state.tracer


@contextmanager
def span(name: str, *, kind: SpanKind = SpanKind.INTERNAL, attributes: dict[str, Any] | None = None) -> Iterator[Span]:
    """A span, current inside the block (an exception marks it failed); a no-op one when tracing is off."""
    if _state.tracer is None:
        yield INVALID_SPAN
        return
    with _state.tracer.start_as_current_span(name, kind=kind, attributes=attributes) as current:
        yield current


def current_traceparent() -> str:
    """The current span as a W3C `traceparent` header value ("" with none, or tracing off)."""
    if _state.tracer is None:
        return ""
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier.get("traceparent", "")


def context_of(traceparent: str) -> Context | None:
    """The context whose parent is the span `traceparent` names (None for "")."""
    return _propagator.extract({"traceparent": traceparent}) if traceparent else None


def trace_id_of(traceparent: str) -> str:
    """The trace id (32 hex digits) of a `traceparent` value ("" if it has none)."""
    parts = traceparent.split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else ""


def current_trace_id() -> str:
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""


class TraceIdFilter(logging.Filter):
    """Adds `trace_id` to a record logged inside a span (the handler's JSON line then carries it),
    so a turn's log lines and its trace find each other."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _state.tracer is not None and not hasattr(record, "trace_id"):
            trace_id = current_trace_id()
            if trace_id:
                record.trace_id = trace_id
        return True


class TracingMiddleware:
    """ASGI: a server span per HTTP request and per websocket connection (for as long as it is open),
    continuing the caller's trace when the request carries a `traceparent` header."""

    def __init__(self, app: AsgiApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if _state.tracer is None or kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or () if k in _PROPAGATED}
        parent = _propagator.extract(headers) if headers else None
        method = scope.get("method", "GET") if kind == "http" else "GET"
        attributes = {
            "http.request.method": method,
            "url.path": scope.get("path", ""),
            "url.scheme": scope.get("scheme") or ("ws" if kind == "websocket" else "http"),
        }
        name = method if kind == "http" else "websocket"
        with _state.tracer.start_as_current_span(
            name, context=parent, kind=SpanKind.SERVER, attributes=attributes
        ) as s:
            if kind == "websocket":  # the stream's sends go straight through: no cost per event
                await self.app(scope, receive, send)
                return

            async def traced_send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    status = int(message.get("status", 0))
                    s.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        s.set_status(StatusCode.ERROR)
                await send(message)

            await self.app(scope, receive, traced_send)


_PROPAGATED = (b"traceparent", b"tracestate")


class RouteNaming:
    """Django middleware: names the request's span after the URL route it resolved to ("POST
    api/v1/agent/execute"), low-cardinality as the HTTP conventions want; nothing when tracing is off."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)
            # Django runs a sync process_view of an async chain on a thread (a hop per request): an
            # async chain gets the coroutine one.
            self.process_view = self._async_view  # type: ignore[method-assign,assignment]

    def __call__(self, request: Any) -> Any:
        return self.get_response(request)  # a coroutine when the chain is async: awaited by Django

    def process_view(self, request: Any, *_args: Any) -> None:
        _name_span(request)

    async def _async_view(self, request: Any, *_args: Any) -> None:
        _name_span(request)


def _name_span(request: Any) -> None:
    if _state.tracer is None:
        return
    match = getattr(request, "resolver_match", None)
    route = getattr(match, "route", "") if match is not None else ""
    if route:
        current = trace.get_current_span()
        current.update_name(f"{request.method} {route}")
        current.set_attribute("http.route", route)
