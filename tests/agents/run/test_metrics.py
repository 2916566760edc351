"""Metrics of turns: a scrape after a turn shows its counters and histograms (started, finished, its
duration and time to first token, its model tokens, its tool call), every listed series is there
from the first scrape at 0, and no label carries a session, user or turn id."""

from __future__ import annotations

import re
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from agents.models import ToolApproval, Turn
from aptix.metrics import exposition
from tests.helpers import inline_db

LISTED = (
    "aptix_turns_started_total",
    "aptix_turns_finished_total",
    "aptix_turn_duration_seconds",
    "aptix_time_to_first_token_seconds",
    "aptix_tool_calls_total",
    "aptix_tool_call_duration_seconds",
    "aptix_model_tokens_total",
    "aptix_approvals_pending",
    "aptix_mcp_servers_up",
    "aptix_run_queue_depth",
    "aptix_run_queue_oldest_age_seconds",
    "aptix_websockets_open",
    "aptix_refusals_total",
)


def samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = exposition().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict, name: str, **labels: str) -> float:
    return scraped.get((name, tuple(sorted(labels.items()))), 0.0)


@inline_db
async def test_every_listed_series_is_there_at_zero_before_anything_happened():
    scraped = await sync_to_async(samples)()
    names = {name for name, _labels in scraped}
    missing = [name for name in LISTED if name not in names and f"{name}_count" not in names]
    assert missing == []
    assert value(scraped, "aptix_run_queue_depth") == 0
    assert value(scraped, "aptix_approvals_pending") == 0
    # the known label values are there before their first use: statuses, executions, modes, models, outcomes
    finished = {labels for name, labels in scraped if name == "aptix_turns_finished_total"}
    assert (("execution", "agent"), ("mode", "general"), ("model", "offline"), ("status", "failed")) in finished
    tools = {dict(labels)["tool"] for name, labels in scraped if name == "aptix_tool_calls_total"}
    assert {"agent_list_modes", "agent_change_mode", "unknown", "client"} <= tools
    reasons = {dict(labels)["reason"] for name, labels in scraped if name == "aptix_refusals_total"}
    assert {"turns", "api", "bad-tokens", "login", "ws-per-user", "ws-per-session"} <= reasons


@inline_db
async def test_a_scrape_after_a_turn_shows_its_counters_and_histograms(make_session, run_turn, model):
    before = await sync_to_async(samples)()
    session = await make_session(mode="general", execution="agent")
    model.reply("", tool_calls=[("agent_list_modes", {})], prompt_tokens=30, completion_tokens=5)
    model.reply("Here they are.", prompt_tokens=50, completion_tokens=7)
    turn = await run_turn(session, "Which modes are there?", execution="agent")
    assert turn.status == "completed"
    after = await sync_to_async(samples)()

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    turn_labels = {"execution": "agent", "mode": "general", "model": "offline"}
    assert grew("aptix_turns_started_total", status="running", **turn_labels) == 1
    assert grew("aptix_turns_finished_total", status="completed", **turn_labels) == 1
    duration = {"status": "completed", "execution": "agent", "model": "offline"}
    assert grew("aptix_turn_duration_seconds_count", **duration) == 1
    assert grew("aptix_time_to_first_token_seconds_count", model="offline") == 1
    assert grew("aptix_model_tokens_total", model="offline", kind="prompt") == 80
    assert grew("aptix_model_tokens_total", model="offline", kind="completion") == 12
    assert grew("aptix_tool_calls_total", tool="agent_list_modes", outcome="ok") == 1
    assert grew("aptix_tool_call_duration_seconds_count", tool="agent_list_modes") == 1


@inline_db
async def test_labels_are_bounded_no_ids_and_no_made_up_tool_names(make_session, run_turn, model):
    session = await make_session(mode="general", execution="agent")
    model.reply("", tool_calls=[("made_up_tool_4f2a", {})])
    model.reply("Done.")
    turn = await run_turn(session, "Go", execution="agent")
    text = (await sync_to_async(exposition)()).decode()
    for identifier in (turn.id, session.id, str(session.user_id)):
        assert not re.search(rf'="{re.escape(identifier)}"', text)
    assert "made_up_tool_4f2a" not in text
    assert value(await sync_to_async(samples)(), "aptix_tool_calls_total", tool="unknown", outcome="error") >= 1
    label_names = {
        label for family in text_string_to_metric_families(text) for sample in family.samples for label in sample.labels
    }
    assert label_names <= {"status", "execution", "mode", "model", "tool", "outcome", "kind", "reason", "server", "le"}


@inline_db
async def test_approvals_pending_and_the_run_queue_are_read_at_scrape_time(make_session):
    session = await make_session()
    waiting = await Turn.objects.acreate(
        session=session, index=1, user_message="Go", mode=session.mode, status=Turn.Status.AWAITING_APPROVAL
    )
    await ToolApproval.objects.acreate(
        session=session, turn=waiting, team_id=session.team_id, tool_call_id="call_1", tool="sql__query", kind="tool"
    )
    queued = await Turn.objects.acreate(
        session=session, index=2, user_message="Next", mode=session.mode, status=Turn.Status.QUEUED
    )
    await Turn.objects.filter(pk=queued.pk).aupdate(created_at=timezone.now() - timedelta(seconds=30))
    scraped = await sync_to_async(samples)()
    assert value(scraped, "aptix_approvals_pending") == 1
    assert value(scraped, "aptix_run_queue_depth") == 1
    assert 30 <= value(scraped, "aptix_run_queue_oldest_age_seconds") < 60
    await Turn.objects.filter(pk=queued.pk).aupdate(status=Turn.Status.CANCELLED)
    await ToolApproval.objects.filter(turn=waiting).aupdate(decision="denied")
    scraped = await sync_to_async(samples)()
    assert (value(scraped, "aptix_approvals_pending"), value(scraped, "aptix_run_queue_depth")) == (0, 0)
    assert value(scraped, "aptix_run_queue_oldest_age_seconds") == 0
