"""The registry of event types (agents/events/registry.py) and the views of each type
(agents/web/event_views.py): every write is checked against its type's entry, a status change needs
its transition guard, events outside a run take the one checked path, and the page's timeline and
the live stream draw a type through the same view."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

import pytest
from asgiref.sync import sync_to_async

from agents.events import EVENT_TYPES, EVENTS, EventPayloadError, EventRecorder, EventType, check_payload
from agents.events.payloads import final_payload, turn_columns
from agents.events.writer import TurnWrite
from agents.models import Turn, TurnEvent
from agents.sessions import session_create
from agents.turns import finished, transition, turn_end_unrun, turn_start
from agents.web.event_views import EVENT_VIEWS
from agents.web.live import LiveRenderer
from agents.web.timeline import render_turn, turn_items

USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "turn_total": 5}


def _final(status: str, **extra: Any) -> dict[str, Any]:
    payload = final_payload(extra, status=status, answer="Done.", mode="general", mode_changes=[])
    return {**payload, "usage": {"prompt_tokens": 3, "completion_tokens": 2}, "steps": 1}


# One well-formed payload of every event type, in the order a turn writes them.
SAMPLES: dict[str, dict[str, Any]] = {
    "turn.started": {"mode": "general", "execution": "agent", "model": "offline", "max_steps": 5, "tool_kinds": {}},
    "step.started": {"step": 1, "max_steps": 5, "mode": "general", "messages_from": 0, "messages": [], "tools": []},
    "model.delta": {"text": "Let me"},
    "model.retry": {"step": 1, "reason": "cut_off"},
    "model.message": {
        "step": 1,
        "content": "Let me look.",
        "tool_calls": [{"id": "c1", "name": "agent_list_modes", "arguments": "{}"}],
        "finish_reason": "tool_calls",
        "usage": USAGE,
    },
    "tool.called": {"id": "c1", "name": "agent_list_modes", "arguments": "{}", "kind": "internal"},
    "tool.progress": {"id": "c1", "name": "agent_list_modes", "progress": 1, "total": 2, "message": "half way"},
    "tool.task": {
        "id": "c1",
        "name": "agent_list_modes",
        "taskId": "t-1",
        "status": "working",
        "statusMessage": "Gathering sources",
        "server": "research",
        "resumable": True,
    },
    "tool.result": {"id": "c1", "name": "agent_list_modes", "ok": True, "duration_ms": 3.5, "result": '{"modes": []}'},
    "mode.changed": {"previousMode": "general", "newMode": "data-analysis", "reason": "charts", "branch": False},
    "document.updated": {"documentId": "d1", "title": "TUL-008 <API>", "version": 3, "author": "agent"},
    "approval.requested": {
        "calls": [
            {
                "id": "c2",
                "name": "sql__query",
                "arguments": "{}",
                "kind": "tool",
                "server": "sql",
                "annotations": {},
                "reason": "",
            }
        ],
        "mode": "general",
    },
    "approval.decided": {
        "decisions": [
            {
                "id": "c2",
                "name": "sql__query",
                "kind": "tool",
                "decision": "approved",
                "scope": "once",
                "branch": None,
                "decided_by": "alice",
            }
        ]
    },
    "limit.reached": _final("limit_reached", limit="steps", message="The step limit was reached."),
    "turn.failed": _final("failed", error="boom", kind="model"),
    "turn.cancelled": _final("cancelled", reason="Stopped by the user."),
    "turn.completed": _final("completed"),
}


def test_every_event_type_has_a_sample_that_passes_its_check():
    """A new event type needs a sample here: so the tests below cover it too."""
    assert set(SAMPLES) == set(EVENT_TYPES)
    for event_type, payload in SAMPLES.items():
        check_payload(event_type, payload)


def test_an_unknown_event_type_is_refused():
    with pytest.raises(EventPayloadError, match=r"Unknown event type 'turn\.exploded'"):
        check_payload("turn.exploded", {})


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"status": "completed"}, r"A turn\.completed event needs 'answer' in its payload\."),
        (
            {**SAMPLES["turn.completed"], "answer": None},
            r"A turn\.completed event's 'answer' must be str, not NoneType\.",
        ),
        ({**SAMPLES["turn.completed"], "mode_changes": {}}, r"'mode_changes' must be list, not dict"),
    ],
)
def test_a_malformed_payload_is_refused_naming_the_type_and_the_key(payload, message):
    with pytest.raises(EventPayloadError, match=message):
        check_payload("turn.completed", payload)


def test_keys_added_later_stay_optional_so_stored_rows_still_check():
    started = {k: v for k, v in SAMPLES["turn.started"].items() if k != "history"}
    check_payload("turn.started", started)  # history, tools_left_out ... are NotRequired
    check_payload("tool.result", {"id": "c1", "name": "t", "ok": False, "duration_ms": 1})  # an int is a float


def test_a_status_write_without_its_transition_guard_is_refused():
    with pytest.raises(ValueError, match=r"status 'completed' needs from_statuses.*agents\.turns\.transition"):
        TurnWrite(fields={"status": "completed"})
    assert transition(Turn.Status.COMPLETED).from_statuses == frozenset({Turn.Status.RUNNING})
    TurnWrite(fields={"step_count": 2})  # columns without a status need no guard


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the seeded catalog survives
async def test_the_recorder_refuses_a_malformed_event_before_queueing_it(make_session):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    recorder = EventRecorder(turn, channel_layer=None)
    with pytest.raises(EventPayloadError, match=r"turn\.completed event needs 'answer'"):
        await recorder.emit("turn.completed", {"status": "completed"})
    with pytest.raises(EventPayloadError, match="Unknown event type"):
        await recorder.emit("turn.exploded", {})
    await recorder.drain()
    assert recorder.seq == 0 and not await TurnEvent.objects.filter(turn_id=turn.id).aexists()


@pytest.mark.django_db
def test_events_outside_a_run_are_checked_and_a_bad_one_writes_nothing(team_a, alice):
    """A turn no run holds is ended through events_append: its malformed event rolls back the row's
    status change too."""
    session = session_create(team=team_a, user=alice)
    turn = turn_start(session=session, text="Hi")
    with pytest.raises(EventPayloadError, match=r"approval\.decided event needs 'decisions'"):
        turn_end_unrun(
            turn,
            session_id=session.id,
            status="cancelled",
            event_type="turn.cancelled",
            payload={"reason": "test"},
            mode="general",
            before=[("approval.decided", {})],
        )
    turn.refresh_from_db()
    assert turn.status == Turn.Status.QUEUED and not turn.events.exists()
    assert turn_end_unrun(
        turn, session_id=session.id, status="cancelled", event_type="turn.cancelled", payload={}, mode="general"
    )
    assert list(turn.events.values_list("seq", "type")) == [(1, "turn.cancelled")]


def test_a_final_events_turn_columns_are_those_the_run_writes_with_it():
    """live.py gives a finished turn its columns from the final event: the same values that
    agents/turns.py `finished` writes to the row."""
    counters = {"step_count": 2, "prompt_tokens": 7, "completion_tokens": 4}
    payload = final_payload(
        {"error": "boom"},
        status="failed",
        answer="partial",
        mode="general",
        mode_changes=[],
        usage={"prompt_tokens": 7, "completion_tokens": 4},
        steps=2,
    )
    write = finished(
        status="failed", answer="partial", error="boom", mode="general", mode_changes=[], counters=counters
    )
    columns = turn_columns(payload)
    assert columns is not None and columns == {name: write.fields[name] for name in columns}
    assert turn_columns(final_payload({}, status="failed", answer="", mode="general", mode_changes=[])) is None


@pytest.mark.django_db
def test_the_timeline_and_the_live_stream_draw_each_type_through_its_one_view(team_a, alice, monkeypatch):
    session = session_create(team=team_a, user=alice, execution="agent")
    turn = turn_start(session=session, text="Show me the modes")
    drawn: list[str] = []
    for event_type, view in EVENT_VIEWS.items():
        if view.items is not None:

            def spy(timeline, payload, _draw=view.items, _type=event_type):
                drawn.append(_type)
                _draw(timeline, payload)

            monkeypatch.setattr(view, "items", spy)
    shown = sorted(t for t, view in EVENT_VIEWS.items() if view.items is not None)
    assert {"tool.called", "tool.result", "mode.changed", "model.message"} <= set(shown)
    events = [
        TurnEvent.objects.create(turn=turn, seq=seq, type=event_type, payload=SAMPLES[event_type])
        for seq, event_type in enumerate([t for t in SAMPLES if not EVENTS[t].final], 1)
    ]

    items = turn_items(turn, events)  # the page
    assert sorted(set(drawn)) == shown
    assert {"text", "tool", "mode", "approval", "document"} <= {item.kind for item in items}

    drawn.clear()
    live = LiveRenderer(session)  # the live stream, one event at a time
    fragments = {event.type: live.render(turn, event.type, event.payload, event.seq) for event in events}
    assert sorted(set(drawn)) == shown
    for event_type, marker in [
        ("tool.called", 'id="tool-c1"'),
        ("tool.progress", 'id="tool-c1-progress"'),
        ("tool.task", "Task working: Gathering sources"),
        ("tool.result", "&quot;modes&quot;"),
        ("mode.changed", "<strong>data-analysis</strong>"),
        ("document.updated", "Document <strong>TUL-008 &lt;API&gt;</strong> v3 updated"),
        ("model.message", "Let me look."),
    ]:
        upto = next(i for i, event in enumerate(events, 1) if event.type == event_type)
        page = render_turn(turn, events[:upto])  # the page drawn from the stored events so far
        assert marker in fragments[event_type] and marker in page, event_type


def test_a_new_event_type_is_one_entry(monkeypatch):
    """What adding an event type takes: its payload and its entry. It is then checked on every
    write; until it has a view (event_views.py) the live stream only moves its cursor."""

    class NotePinned(TypedDict):
        text: str
        by: int
        color: NotRequired[str]

    monkeypatch.setitem(EVENTS, "note.pinned", EventType("note.pinned", NotePinned))
    check_payload("note.pinned", {"text": "Check Q3", "by": 1})
    with pytest.raises(EventPayloadError, match=r"note\.pinned event's 'by' must be int, not str"):
        check_payload("note.pinned", {"text": "Check Q3", "by": "alice"})
    assert "note.pinned" not in EVENT_VIEWS


def test_the_export_represents_registered_types_only():
    from agents.web.views.export import EXPORTS

    assert set(EXPORTS) <= set(EVENTS) and {"tool.called", "tool.result"} <= set(EXPORTS)
