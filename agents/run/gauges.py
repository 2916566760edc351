"""The metrics read at scrape time (aptix/metrics.py `on_scrape`), and the label values a deployment
knows before anything happened (so its series show at 0 from the first scrape).

Read when a scrape asks, never kept in sync by hand: approvals waiting for a user's decision, turns
queued and how long the oldest has waited (the database knows them for every process and worker, so
any process answers for all), and this process's MCP servers that are up (each process runs its own).
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db import DatabaseError
from django.db.models import Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from aptix import metrics
from modes.catalog import active_modes
from tools.mcp import mcp_status
from tools.registry import internal_names, mcp_registry

from ..llm.catalog import models_config
from ..models import ToolApproval, Turn

EXECUTIONS = ("ask", "agent")


def run_gauges() -> Iterator[GaugeMetricFamily]:
    pending = ToolApproval.objects.filter(decision="", turn__status=Turn.Status.AWAITING_APPROVAL).count()
    yield GaugeMetricFamily("aptix_approvals_pending", "Tool calls waiting for a user's approval", value=pending)
    queued = Turn.objects.filter(status=Turn.Status.QUEUED)
    depth = queued.count()
    oldest = queued.aggregate(at=Min("created_at"))["at"] if depth else None
    age = (timezone.now() - oldest).total_seconds() if oldest else 0.0
    yield GaugeMetricFamily("aptix_run_queue_depth", "Turns waiting for a run to take them", value=depth)
    yield GaugeMetricFamily(
        "aptix_run_queue_oldest_age_seconds", "How long the oldest waiting turn has waited", value=max(age, 0.0)
    )


def mcp_gauges() -> Iterator[GaugeMetricFamily]:
    statuses = mcp_status()
    up = [status.state == "ready" for status in statuses]
    yield GaugeMetricFamily("aptix_mcp_servers_up", "MCP servers of this process that are ready", value=sum(up))
    each = GaugeMetricFamily("aptix_mcp_server_up", "1 while the MCP server is ready, else 0", labels=["server"])
    for status, ready in zip(statuses, up, strict=True):
        each.add_metric([status.name], 1.0 if ready else 0.0)
    yield each


def label_values() -> None:
    """The statuses, executions, catalog modes and models and configured tools, at 0."""
    try:
        modes = [mode.key for mode in active_modes()]
    except DatabaseError:  # the rest are worth creating all the same (the scrape logs what failed)
        modes = []
    metrics.known_labels(
        statuses=sorted(Turn.FINAL_STATUSES),
        executions=EXECUTIONS,
        modes=modes,
        models=list(models_config().models),
        tools=[*internal_names(), *mcp_registry.names()],
    )


def register() -> None:
    """Called once per process (agents/apps.py)."""
    metrics.on_scrape("runs", run_gauges)
    metrics.on_scrape("mcp", mcp_gauges, before=label_values)
