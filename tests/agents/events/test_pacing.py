"""Delta coalescing adapts to load: a reply's first delta goes at once; then the
interval grows with the reply's age, with the replies streaming in the process and when the turn's
writer is behind; never past the cap. The policy is a pure function, tested without clocks."""

from __future__ import annotations

import gc

import pytest
from asgiref.sync import sync_to_async

from agents.events import EventRecorder
from agents.events.pacing import (
    DELTA_EVENTS_PER_SECOND,
    DELTA_FAST_SECONDS,
    DELTA_INTERVAL,
    DELTA_INTERVAL_LONG,
    DELTA_INTERVAL_MAX,
    StreamingReplies,
    delta_interval,
    streaming,
)
from agents.models import TurnEvent
from agents.turns import turn_start
from tests.helpers import async_db


def test_a_replys_first_delta_goes_at_once_whatever_the_load():
    assert delta_interval(since_start=None) == 0.0
    assert delta_interval(since_start=None, streams=10_000, backlog=1) == 0.0


def test_a_lone_reply_is_fast_for_its_first_second_then_slower():
    assert delta_interval(since_start=0.0) == DELTA_INTERVAL
    assert delta_interval(since_start=DELTA_FAST_SECONDS - 0.01) == DELTA_INTERVAL
    assert delta_interval(since_start=DELTA_FAST_SECONDS) == DELTA_INTERVAL_LONG
    assert delta_interval(since_start=60.0) == DELTA_INTERVAL_LONG


@pytest.mark.parametrize(
    ("streams", "young", "old"),
    [
        (1, DELTA_INTERVAL, DELTA_INTERVAL_LONG),
        (20, DELTA_INTERVAL, DELTA_INTERVAL_LONG),  # 20 fast replies are what the process affords
        (60, 60 / DELTA_EVENTS_PER_SECOND, DELTA_INTERVAL_LONG),
        (200, 200 / DELTA_EVENTS_PER_SECOND, 200 / DELTA_EVENTS_PER_SECOND),
        (100_000, DELTA_INTERVAL_MAX, DELTA_INTERVAL_MAX),  # capped: the text still flows
    ],
)
def test_the_processs_streams_share_its_delta_budget(streams, young, old):
    assert delta_interval(since_start=0.1, streams=streams) == pytest.approx(young)
    assert delta_interval(since_start=5.0, streams=streams) == pytest.approx(old)
    # the process's delta events per second stay within its budget once it is shared
    if streams * (1 / young) > DELTA_EVENTS_PER_SECOND + 1e-9:
        assert young == DELTA_INTERVAL_MAX


def test_a_writer_that_is_behind_makes_its_reply_wait_longer():
    assert delta_interval(since_start=0.1, backlog=1) == DELTA_INTERVAL * 2
    assert delta_interval(since_start=5.0, backlog=1) == DELTA_INTERVAL_LONG + DELTA_INTERVAL
    assert delta_interval(since_start=5.0, streams=100_000, backlog=1) == DELTA_INTERVAL_MAX


def test_more_load_never_means_shorter_intervals():
    ages = [0.0, 0.5, 1.0, 3.0]
    for age in ages:
        intervals = [delta_interval(since_start=age, streams=n) for n in (1, 10, 50, 300, 1000)]
        assert intervals == sorted(intervals)
        assert delta_interval(since_start=age, backlog=1) >= delta_interval(since_start=age)


def test_replies_are_counted_while_they_stream_and_forgotten_with_their_run():
    replies = StreamingReplies()

    class Reply:
        pass

    one, two = Reply(), Reply()
    replies.started(one)
    replies.started(two)
    replies.started(one)  # counted once
    assert len(replies) == 2
    replies.ended(one)
    assert len(replies) == 1
    del two
    gc.collect()
    assert len(replies) == 0  # a run that died mid-reply does not count for ever


@async_db
async def test_the_recorder_sends_each_replys_first_delta_at_once_and_counts_its_stream(make_session):
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    recorder = EventRecorder(turn)
    before = len(streaming)
    await recorder.emit(
        "step.started",
        {"step": 1, "max_steps": None, "mode": "general", "messages_from": 0, "messages": [], "tools": []},
    )
    await recorder.delta("Hel")  # the first: an event at once
    assert recorder.seq == 2 and len(streaming) == before + 1
    await recorder.emit(
        "model.message",
        {
            "step": 1,
            "content": "Hello",
            "tool_calls": [],
            "finish_reason": "stop",
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "turn_total": 2},
        },
    )
    assert len(streaming) == before
    # The next reply's first delta goes at once too, however recently the last one went.
    await recorder.emit(
        "step.started",
        {"step": 2, "max_steps": None, "mode": "general", "messages_from": 0, "messages": [], "tools": []},
    )
    await recorder.delta("Again")
    assert recorder.seq == 5 and len(streaming) == before + 1
    await recorder.drain()
    assert len(streaming) == before
    stored = [
        (e.type, e.payload.get("text"))
        async for e in TurnEvent.objects.filter(turn_id=turn.id).order_by("seq").only("type", "payload")
    ]
    assert stored == [
        ("step.started", None),
        ("model.delta", "Hel"),
        ("model.message", None),
        ("step.started", None),
        ("model.delta", "Again"),
    ]
