"""A socket that misses a live event still shows every event once, in order.

A clean-clone CI run of the scale-out test once saw a client of the second web process get seqs
[1, 2, 4, 5, 6] of a turn: event 3 never reached that socket (the channel layer dropped its
message, or its rendering failed), and the consumer, which skips a seq it has already passed,
carried on without it. Events are in the database before they are broadcast, so a consumer that
sees a seq beyond the next one it expects sends the missing ones from the database first."""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from agents.events import session_group
from agents.events.channel import events_message
from agents.models import Turn, TurnEvent
from agents.turns import turn_start
from tests.helpers import inline_db
from tests.helpers.streams import collect, connect, seqs

pytestmark = inline_db


@sync_to_async
def _stored_turn(session, upto: int = 6) -> tuple[Turn, list[TurnEvent]]:
    """A turn's events up to `upto` (6: it finished), written as a run writes them, before they
    are broadcast."""
    turn = turn_start(session=session, text="Hi")
    payloads = [
        ("turn.started", {"mode": session.mode, "execution": "ask"}),
        ("step.started", {"step": 1, "max_steps": 1}),
        ("model.delta", {"text": "The answer "}),
        ("model.delta", {"text": "is **42**."}),
        ("model.message", {"step": 1, "content": "The answer is **42**.", "usage": {"turn_total": 9}}),
        (
            "turn.completed",
            {
                "status": "completed",
                "answer": "The answer is **42**.",
                "mode": session.mode,
                "mode_changes": [],
                "branch": None,
                "usage": {"prompt_tokens": 5, "completion_tokens": 4},
                "steps": 1,
            },
        ),
    ]
    events = [
        TurnEvent(turn=turn, seq=seq, type=kind, payload=payload) for seq, (kind, payload) in enumerate(payloads, 1)
    ]
    TurnEvent.objects.bulk_create(events[:upto])
    if upto == len(events):
        Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.COMPLETED, answer="The answer is **42**.")
    return turn, events


async def _broadcast(session_id: str, turn: Turn, events: list[TurnEvent]) -> None:
    await get_channel_layer().group_send(session_group(session_id), events_message(session_id, turn.id, events))


async def test_an_event_missed_by_a_socket_is_sent_from_the_database_in_order(make_session, alice, caplog):
    session = await make_session()
    communicator, connected = await connect(session.id, alice, query="turn=&seq=0")  # a page without turns
    assert connected
    turn, events = await _stored_turn(session)
    await _broadcast(session.id, turn, events[:2])
    # event 3's message never arrives
    with caplog.at_level(logging.WARNING, logger="aptix.stream"):
        await _broadcast(session.id, turn, events[3:])
        messages = await collect(communicator)
    assert seqs(messages) == [1, 2, 3, 4, 5, 6]  # the missed event, in its place
    assert "The answer" in messages[2] and "<strong>42</strong>" in messages[-1]
    assert any("missed events 3-3" in record.getMessage() for record in caplog.records)  # and it is logged
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()


async def test_a_page_resumed_mid_turn_is_not_sent_what_it_shows(make_session, alice):
    """The cursor is where the page stands: the next live event after it is no gap."""
    session = await make_session()
    turn, events = await _stored_turn(session, upto=5)
    communicator, connected = await connect(session.id, alice, query=f"turn={turn.id}&seq=5")
    assert connected
    assert await communicator.receive_nothing(timeout=0.2)  # nothing after the cursor yet
    await sync_to_async(events[5].save)()
    await _broadcast(session.id, turn, events[5:])
    assert seqs(await collect(communicator)) == [6]
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()


async def test_a_lost_end_of_turn_arrives_once_the_turn_is_quiet(make_session, alice, settings):
    """Nothing follows a turn's end to show that it was missed: a turn quiet for
    APTIX_WS_CATCHUP seconds is looked up in the database (the killed-worker scale-out run once
    left one client without its sweep-ended turn's end)."""
    settings.APTIX_WS_CATCHUP = 0.2
    session = await make_session()
    communicator, connected = await connect(session.id, alice, query="turn=&seq=0")
    assert connected
    turn, events = await _stored_turn(session)
    await _broadcast(session.id, turn, events[:5])  # the end's message never arrives
    messages = await collect(communicator)
    assert seqs(messages) == [1, 2, 3, 4, 5, 6] and "<strong>42</strong>" in messages[-1]
    assert await communicator.receive_nothing(timeout=0.5)  # an ended turn is not looked up again
    await communicator.disconnect()
