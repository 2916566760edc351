"""EventRecorder: events written before they are broadcast, in seq order, batched behind the run
(group commit), the turn row's columns written with the events they belong to."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.db.models import Max

from agents.events import EventRecorder, message_events, session_group
from agents.events.payloads import final_payload
from agents.events.writer import TurnWrite
from agents.models import Turn, TurnEvent
from agents.turns import turn_start
from tests.helpers import inline_db

pytestmark = inline_db


async def recorder_for(turn, **kwargs) -> EventRecorder:
    """A recorder that carries on after the turn's stored events."""
    last = await TurnEvent.objects.filter(turn_id=turn.id).aaggregate(m=Max("seq"))
    return EventRecorder(turn, start_seq=last["m"] or 0, **kwargs)


class RecordingLayer:
    """A channel layer stand-in that checks, at the moment each event is broadcast, what the
    database already holds (the stream must never be ahead of the database)."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.stored_at_send: list[bool] = []
        self.step_count_at_send: list[int] = []

    async def group_send(self, group, message) -> None:
        assert message["type"] == "turn.events" and message["events"]
        if group.startswith("session_news_"):  # the same events again, for waiters (test_channel.py)
            return
        turn = await Turn.objects.aget(pk=message["turn_id"])
        steps = [
            e.payload["step"] async for e in TurnEvent.objects.filter(turn_id=message["turn_id"], type="model.message")
        ]
        for event in message_events(message):
            self.sent.append({"group": group, **event})
            stored = await TurnEvent.objects.filter(turn_id=event["turn_id"], seq=event["seq"]).aexists()
            self.stored_at_send.append(stored)
            self.step_count_at_send.append((turn.step_count, max(steps, default=0)))


async def test_every_event_is_stored_before_it_is_broadcast_in_order(make_session):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    layer = RecordingLayer()
    recorder = await recorder_for(turn, channel_layer=layer)
    # A fast run: many events back to back, some deferred, some with the turn's own columns.
    await recorder.emit(
        "turn.started",
        {"mode": "general", "execution": "ask", "model": "test", "max_steps": 1, "tool_kinds": {}},
        defer=True,
    )
    for step in range(1, 8):
        await recorder.emit(
            "step.started",
            {"step": step, "max_steps": None, "mode": "general", "messages_from": 0, "messages": [], "tools": []},
        )
        await recorder.delta(f"part {step} ")
        await recorder.emit(
            "model.message",
            {
                "step": step,
                "content": "x",
                "tool_calls": [],
                "finish_reason": "stop",
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "turn_total": 2},
            },
            defer=True,
            turn_write=TurnWrite(fields={"step_count": step}),
        )
        await recorder.emit(
            "tool.called", {"id": f"c{step}", "name": "agent_list_modes", "arguments": "{}", "kind": "internal"}
        )
        await recorder.emit(
            "tool.result", {"id": f"c{step}", "name": "agent_list_modes", "ok": True, "duration_ms": 1.0}, defer=True
        )
    # The row is still queued (no turn.started write here): the guard says so.
    write = TurnWrite(fields={"status": "completed"}, from_statuses=frozenset({"queued"}))
    await recorder.emit(
        "turn.completed",
        final_payload({}, status="completed", answer="", mode="general", mode_changes=[]),
        turn_write=write,
    )
    await recorder.drain()

    stored = [(e.seq, e.type) async for e in TurnEvent.objects.filter(turn_id=turn.id).order_by("seq")]
    assert [seq for seq, _ in stored] == list(range(1, len(stored) + 1))
    assert [(m["seq"], m["event"]) for m in layer.sent] == stored  # each once, in order, after the write
    assert all(layer.stored_at_send)
    assert {m["group"] for m in layer.sent} == {session_group(session.id)}
    # The turn row and its events never disagree: whenever an event went out, the row's step count
    # was that of the last model.message stored (both are written in one transaction).
    assert all(row == stored_max for row, stored_max in layer.step_count_at_send), layer.step_count_at_send
    turn = await Turn.objects.aget(pk=turn.id)
    assert (turn.status, turn.step_count) == ("completed", 7)


async def test_a_later_value_of_a_turn_column_wins(make_session):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    recorder = await recorder_for(turn, channel_layer=RecordingLayer())
    await recorder.emit(
        "model.message",
        {
            "step": 1,
            "content": "",
            "tool_calls": [],
            "finish_reason": "stop",
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "turn_total": 2},
        },
        defer=True,
        turn_write=TurnWrite(fields={"step_count": 1, "prompt_tokens": 5}),
    )
    await recorder.emit(
        "model.message",
        {
            "step": 2,
            "content": "",
            "tool_calls": [],
            "finish_reason": "stop",
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "turn_total": 2},
        },
        defer=True,
        turn_write=TurnWrite(fields={"step_count": 2}),
    )
    await recorder.drain()
    turn = await Turn.objects.aget(pk=turn.id)
    assert (turn.step_count, turn.prompt_tokens) == (2, 5)


async def test_a_deferred_event_is_written_by_the_next_emit_or_by_drain(make_session):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    layer = RecordingLayer()
    recorder = await recorder_for(turn, channel_layer=layer)
    await recorder.emit("tool.result", {"id": "c1", "name": "t", "ok": True, "duration_ms": 1.0}, defer=True)
    await recorder.drain()
    assert [m["event"] for m in layer.sent] == ["tool.result"]
    # A recorder for the same turn later (a continued API turn) carries on the seq.
    again = await recorder_for(turn, channel_layer=layer)
    await again.emit(
        "turn.completed", final_payload({}, status="completed", answer="", mode="general", mode_changes=[])
    )
    await again.drain()
    assert [e.seq async for e in TurnEvent.objects.filter(turn_id=turn.id).order_by("seq")] == [1, 2]


async def test_unknown_event_types_are_refused(make_session):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    recorder = await recorder_for(turn, channel_layer=RecordingLayer())
    try:
        await recorder.emit("turn.exploded", {})
    except ValueError as exc:
        assert "turn.exploded" in str(exc)
    else:
        raise AssertionError("an unknown event type was accepted")
