"""Prometheus metrics (prometheus-client): every series Aptix exports, named `aptix_…`, and the text a
scrape gets (`GET /metrics`, aptix/scrape.py; a worker's `--health-port` server).

Three kinds of series:

- **Counted where it happens**: turns started and finished, their durations and time to the first
  token, tool calls and their durations, model tokens, refusals (rate limits, the login lockout, the
  live stream's caps). One `labels(...).inc()` per turn, model call or tool call, never per token
  delta. The callers use the small functions below, one line each.
- **Computed at scrape time** (`on_scrape`): what the database or the process knows already
  (approvals pending, the run queue's depth and oldest waiting age, MCP servers up) is read when a
  scrape asks, never kept in sync by hand.
- **Kept by the process**: the websockets it holds (up when one is admitted, down when it leaves).

Labels are bounded: statuses, executions, catalog modes and models, tool names (tools the deployment
configures; a name the model made up is `unknown`, an API client's own tools are `client`), outcomes
and refusal reasons. Never a session, user or turn id. Every known label combination is created at
the first scrape (`known_labels`), so a series is there, at 0, before it is first used.

Several processes: with PROMETHEUS_MULTIPROC_DIR set (a directory the processes of one host share,
emptied before they start), prometheus-client's multiprocess mode adds up the counters and histograms
of every process and the websockets of the live ones, so any process's `/metrics` answers for the
host. Without it each process answers for itself.
"""

from __future__ import annotations

import atexit
import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)
from prometheus_client.registry import Collector

from aptix import env

logger = logging.getLogger("aptix.metrics")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MULTIPROCESS = bool(env.PROMETHEUS_MULTIPROC_DIR.read())

OUTCOMES = ("ok", "error", "stopped", "declined")  # a tool call's
UNKNOWN_TOOL, CLIENT_TOOL = "unknown", "client"
TOKEN_KINDS = ("prompt", "completion")
# What was refused: the rate limits (aptix/ratelimits.py groups), the login lockout, the stream's caps.
REFUSALS = ("turns", "api", "bad-tokens", "login", "ws-per-user", "ws-per-session", "ws-message-size")

METRICS = CollectorRegistry(auto_describe=True)  # this process's own series
disable_created_metrics()  # no `*_created` twin of each counter and histogram: half the series, no use here

TURNS_STARTED = Counter(
    "aptix_turns_started", "Turns whose run started", ["status", "execution", "mode", "model"], registry=METRICS
)
TURNS_FINISHED = Counter(
    "aptix_turns_finished",
    "Turns that ended, by end status",
    ["status", "execution", "mode", "model"],
    registry=METRICS,
)
TURN_DURATION = Histogram(
    "aptix_turn_duration_seconds",
    "From a turn's creation to its end, as its user waited (queue, model, tools, approvals)",
    ["status", "execution", "model"],
    buckets=(0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600),
    registry=METRICS,
)
FIRST_TOKEN = Histogram(
    "aptix_time_to_first_token_seconds",
    "From a run's start to the first piece of its answer",
    ["model"],
    buckets=(0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60),
    registry=METRICS,
)
TOOL_CALLS = Counter("aptix_tool_calls", "Tool calls, by tool and outcome", ["tool", "outcome"], registry=METRICS)
TOOL_DURATION = Histogram(
    "aptix_tool_call_duration_seconds",
    "How long a tool call ran",
    ["tool"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=METRICS,
)
MODEL_TOKENS = Counter("aptix_model_tokens", "Model tokens, by model and kind", ["model", "kind"], registry=METRICS)
REFUSED = Counter(
    "aptix_refusals",
    "Requests refused by a rate limit, the login lockout or a stream cap",
    ["reason"],
    registry=METRICS,
)
WEBSOCKETS_OPEN = Gauge(
    "aptix_websockets_open", "Live-stream websockets held", multiprocess_mode="livesum", registry=METRICS
)
STARTED_STATUS = "running"  # aptix_turns_started's status: where a started turn is


# --- counted where it happens (one line at each call site) ----------------------------------------


def turn_started(*, execution: str, mode: str, model: str) -> None:
    TURNS_STARTED.labels(STARTED_STATUS, execution, mode, model).inc()


def turn_finished(*, status: str, execution: str, mode: str, model: str, seconds: float | None) -> None:
    TURNS_FINISHED.labels(status, execution, mode, model).inc()
    if seconds is not None:
        TURN_DURATION.labels(status, execution, model).observe(max(seconds, 0.0))


def first_token_timer(model: str) -> Callable[[], None]:
    """A callable that observes the time since now as `model`'s time to first token, once."""
    started, child = time.monotonic(), FIRST_TOKEN.labels(model)
    done = False

    def observe() -> None:
        nonlocal done
        if not done:
            done = True
            child.observe(time.monotonic() - started)

    return observe


def model_tokens(model: str, *, prompt: int, completion: int) -> None:
    MODEL_TOKENS.labels(model, "prompt").inc(prompt)
    MODEL_TOKENS.labels(model, "completion").inc(completion)


def tool_call(tool: str, kind: str | None, outcome: str, seconds: float | None = None) -> None:
    """One tool call; `kind` None is a name no tool of the turn has (a bounded label all the same)."""
    name = UNKNOWN_TOOL if kind is None else CLIENT_TOOL if kind == "client" else tool
    TOOL_CALLS.labels(name, outcome).inc()
    if seconds is not None:
        TOOL_DURATION.labels(name).observe(seconds)


def refused(reason: str) -> None:
    REFUSED.labels(reason).inc()


def websocket_opened() -> None:
    WEBSOCKETS_OPEN.inc()


def websocket_closed() -> None:
    WEBSOCKETS_OPEN.dec()


# --- zero until used -----------------------------------------------------------------------------


def known_labels(
    *,
    statuses: Iterable[str],
    executions: Iterable[str],
    modes: Iterable[str],
    models: Iterable[str],
    tools: Iterable[str],
) -> None:
    """Create every known label combination (at 0), so each series is there before its first use."""
    executions, modes, models = list(executions), list(modes), list(models)
    for execution in executions:
        for mode in modes:
            for model in models:
                TURNS_STARTED.labels(STARTED_STATUS, execution, mode, model)
    for status in statuses:
        for execution in executions:
            for model in models:
                TURN_DURATION.labels(status, execution, model)
                for mode in modes:
                    TURNS_FINISHED.labels(status, execution, mode, model)
    for model in models:
        FIRST_TOKEN.labels(model)
        for kind in TOKEN_KINDS:
            MODEL_TOKENS.labels(model, kind)
    for tool in [*tools, UNKNOWN_TOOL, CLIENT_TOOL]:
        TOOL_DURATION.labels(tool)
        for outcome in OUTCOMES:
            TOOL_CALLS.labels(tool, outcome)
    for reason in REFUSALS:
        REFUSED.labels(reason)


# --- computed at scrape time ---------------------------------------------------------------------

Scrape = Callable[[], Iterable[Any]]  # yields metric families (prometheus_client.core.*MetricFamily)


class _ScrapeTime(Collector):
    def __init__(self) -> None:
        self.sources: dict[str, Scrape] = {}
        self.before: dict[str, Callable[[], None]] = {}

    def collect(self) -> Iterable[Any]:
        for name, source in list(self.sources.items()):
            try:
                yield from list(source())
            except Exception:  # one unreadable source (the database down) must not fail the scrape
                logger.warning("Metrics: %s could not be read", name, exc_info=True, extra={"event": "metrics.failed"})


_scrape_time = _ScrapeTime()
SCRAPED = CollectorRegistry(auto_describe=False)
SCRAPED.register(_scrape_time)


def on_scrape(name: str, source: Scrape | None = None, *, before: Callable[[], None] | None = None) -> None:
    """Register `source` (metric families read at each scrape) and/or `before` (run before each
    scrape: creating the known labels). Registering a name again replaces it."""
    if source is not None:
        _scrape_time.sources[name] = source
    if before is not None:
        _scrape_time.before[name] = before


def exposition() -> bytes:
    """The metrics text a scrape gets: this process's series (or the host's, in multiprocess mode)
    and those read now."""
    for name, prepare in list(_scrape_time.before.items()):
        try:
            prepare()
        except Exception:  # the counters are worth answering with all the same
            logger.warning("Metrics: %s failed", name, exc_info=True, extra={"event": "metrics.failed"})
    if MULTIPROCESS:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        own = generate_latest(registry)
    else:
        own = generate_latest(METRICS)
    return own + generate_latest(SCRAPED)


def _process_gone() -> None:
    multiprocess.mark_process_dead(os.getpid())  # its websockets no longer count


if MULTIPROCESS:
    atexit.register(_process_gone)
