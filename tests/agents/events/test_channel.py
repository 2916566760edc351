"""What a written batch sends to the channel layer: every event to the session's group (the pages'
streams), and the events other than a reply's pieces, without payloads, to its news group (what waits
for a turn to end or pause: the JSON API's request on a web process)."""

from __future__ import annotations

from channels.layers import get_channel_layer
from django.utils import timezone

from agents.events import session_group, session_news_group
from agents.events.channel import send_events
from agents.models import TurnEvent

SESSION, TURN = "s" * 32, "t" * 32


def _event(seq: int, kind: str, payload: dict) -> TurnEvent:
    return TurnEvent(seq=seq, type=kind, payload=payload, created_at=timezone.now())


async def _listening(group: str) -> str:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    return channel


async def test_the_news_group_gets_no_reply_pieces_and_no_payloads():
    layer = get_channel_layer()
    pages, news = await _listening(session_group(SESSION)), await _listening(session_news_group(SESSION))

    await send_events(layer, SESSION, TURN, [_event(1, "model.delta", {"text": "Hel"})])
    await send_events(
        layer,
        SESSION,
        TURN,
        [_event(2, "model.delta", {"text": "lo"}), _event(3, "turn.completed", {"answer": "Hello"})],
    )

    first, second = await layer.receive(pages), await layer.receive(pages)
    assert [e["event"] for e in first["events"] + second["events"]] == ["model.delta", "model.delta", "turn.completed"]
    told = await layer.receive(news)  # first: the delta-only batch sent nothing there (FIFO)
    assert told["turn_id"] == TURN and [(e["seq"], e["event"], e["payload"]) for e in told["events"]] == [
        (3, "turn.completed", {})
    ]
