"""An in-memory OTLP/HTTP receiver: a real HTTP server on loopback that accepts the protobuf POSTs an
OpenTelemetry exporter sends to `/v1/traces`, decodes them with opentelemetry-proto and keeps the
spans, for tests of what a process exports (in this process or a subprocess pointed at `url`).

    with OtlpReceiver() as receiver:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url
        ...
        spans = await receiver.wait_for(lambda spans: any(s.name == "chat x" for s in spans))
"""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: str
    start: int  # ns since the epoch
    end: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status: int  # 0 unset, 1 ok, 2 error
    links: list[tuple[str, str]] = field(default_factory=list)  # (trace id, span id)


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, which) if which else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


def decode(body: bytes) -> list[ReceivedSpan]:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for s in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=s.name,
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex(),
                        kind=KINDS.get(s.kind, "unspecified"),
                        start=s.start_time_unix_nano,
                        end=s.end_time_unix_nano,
                        attributes=_attributes(s.attributes),
                        resource=resource,
                        status=s.status.code,
                        links=[(link.trace_id.hex(), link.span_id.hex()) for link in s.links],
                    )
                )
    return spans


class OtlpReceiver:
    """The receiver; `spans` is everything received so far (in arrival order), `posts` the requests."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.posts = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                spans = decode(body)
                with receiver._lock:
                    receiver.spans += spans
                    receiver.posts += 1
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def received(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    async def wait_for(self, done: Callable[[list[ReceivedSpan]], bool], timeout: float = 20) -> list[ReceivedSpan]:
        """The spans once `done(spans)` holds (an AssertionError naming what came after `timeout` s)."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.received()
            if done(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"spans received: {[(s.name, s.resource.get('aptix.process.kind')) for s in spans]}"
                )
            await asyncio.sleep(0.05)  # the exporters post on their own schedule, from other threads/processes


def tracer_provider(receiver: OtlpReceiver, kind: str = "web") -> Any:
    """A tracer provider of this process that exports to `receiver` over OTLP/HTTP as a serving
    process does (aptix/tracing.py configure), flushing each span at once."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "aptix", "aptix.process.kind": kind}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces")))
    return provider


def by_name(spans: list[ReceivedSpan], prefix: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name.startswith(prefix)]
