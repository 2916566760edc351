"""Tracing is set up only where OTEL_EXPORTER_OTLP_ENDPOINT is set (aptix/tracing.py): without it a
serving process loads no SDK, sets no tracer provider and every helper is a no-op; with it the
process exports what it traces to that endpoint. Log records made inside a span carry its trace id."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import INVALID_SPAN

from aptix import tracing
from aptix.logging import StructuredFormatter
from tests.helpers.otlp import OtlpReceiver, by_name

ROOT = Path(__file__).resolve().parents[2]

# A serving process's set-up (aptix/asgi.py), then one span through the helpers; prints what it found.
PROBE = """
import json, sys
import django
django.setup()
import aptix.asgi
from opentelemetry import trace
from aptix import tracing
with tracing.span("probe") as span:
    recording = span.is_recording()
trace.get_tracer_provider().force_flush() if tracing.enabled() else None
print(json.dumps({
    "enabled": tracing.enabled(),
    "provider": type(trace.get_tracer_provider()).__name__,
    "sdk_loaded": "opentelemetry.sdk.trace" in sys.modules,
    "recording": recording,
}))
"""


def _probe(**env: str) -> dict:
    environ = {**os.environ, "DEBUG": "false", "SECRET_KEY": "test-only", "DATABASE_URL": "", **env}
    environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    environ.update(env)
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        check=False,
        cwd=ROOT,
        env={**environ, "DJANGO_SETTINGS_MODULE": "aptix.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
async def test_without_the_endpoint_a_serving_process_sets_nothing_up_and_sends_nothing():
    with OtlpReceiver() as receiver:
        found = _probe(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{receiver.url}/v1/traces")  # the SDK's, not ours
        assert found == {"enabled": False, "provider": "ProxyTracerProvider", "sdk_loaded": False, "recording": False}
        assert receiver.posts == 0


@pytest.mark.slow
async def test_with_the_endpoint_a_serving_process_exports_its_spans_there():
    with OtlpReceiver() as receiver:
        found = _probe(OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_SERVICE_NAME="aptix-test")
        assert found == {"enabled": True, "provider": "TracerProvider", "sdk_loaded": True, "recording": True}
        (probe,) = by_name(await receiver.wait_for(lambda s: bool(by_name(s, "probe"))), "probe")
    assert probe.resource["service.name"] == "aptix-test" and probe.resource["aptix.process.kind"] == "web"


def test_helpers_are_no_ops_when_tracing_is_off():
    assert not tracing.enabled()
    with tracing.span("anything") as span:
        assert span is INVALID_SPAN
        assert tracing.current_traceparent() == ""


def test_a_log_record_made_in_a_span_carries_its_trace_id():
    formatter, trace_ids = StructuredFormatter(), tracing.TraceIdFilter()

    def line(message: str) -> dict:
        record = logging.LogRecord("aptix.runs", logging.INFO, __file__, 1, message, (), None)
        trace_ids.filter(record)
        return json.loads(formatter.format(record))

    assert "trace_id" not in line("tracing off")
    with tracing.use_tracer_provider(TracerProvider()):
        assert "trace_id" not in line("outside any span")
        with tracing.span("turn") as span:
            logged = line("inside")
    assert logged["trace_id"] == format(span.get_span_context().trace_id, "032x")
    handler = logging.getLogger().handlers  # the structured console handler of settings.LOGGING has the filter
    assert any(isinstance(f, tracing.TraceIdFilter) for h in handler for f in h.filters)
