"""What one user's sockets may cost, and how long they live, through the real
ASGI application (origin check, session cookie, the consumer):

- a socket without a cursor gets only the open turns, a replay is bounded (a page too far behind is
  told to reload), sockets are capped per user and per session, an oversized frame closes the socket;
- a socket closes when its user logs out, leaves the team, is deactivated or changes password, when
  its session is deleted, and (the periodic check) when the login session ends without a signal.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.sessions.backends.db import SessionStore
from django.utils import timezone

from agents.models import AgentSession, Turn, TurnEvent
from agents.web.streams import (
    CLOSE_ACCESS_LOST,
    CLOSE_BAD_CURSOR,
    CLOSE_SESSION_GONE,
    CLOSE_SIGNED_OUT,
    CLOSE_TOO_BIG,
    CLOSE_TOO_MANY,
)
from aptix.models import Membership
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.streams import CURSOR, open_socket

pytestmark = async_db


@sync_to_async
def add_turn(session: AgentSession, index: int, *, events: int = 4, finished: bool = True) -> Turn:
    """A turn of `events` events (turn.started, deltas, …, turn.completed when finished)."""
    now = timezone.now()
    turn = Turn.objects.create(
        session=session,
        index=index,
        user_message=f"Question {index}",
        answer=f"Answer {index}." if finished else "",
        status=Turn.Status.COMPLETED if finished else Turn.Status.RUNNING,
        mode=session.mode,
        execution="ask",
        started_at=now,
        finished_at=now if finished else None,
    )
    payloads = [("turn.started", {"mode": session.mode, "execution": "ask"})]
    payloads += [("model.delta", {"text": f"word{i} "}) for i in range(events - 1 - finished)]
    if finished:
        payloads.append(("turn.completed", {"answer": f"Answer {index}."}))
    TurnEvent.objects.bulk_create(
        TurnEvent(turn=turn, seq=i, type=t, payload=p) for i, (t, p) in enumerate(payloads, 1)
    )
    return turn


def turns_in(frames: list[str]) -> set[str]:
    return {m.group(1) for frame in frames if (m := CURSOR.search(frame))}


# --- replay, caps, frames -----------------------------------------------------------------------------


async def test_a_socket_without_a_cursor_gets_only_the_open_turn(make_session, alice):
    session = await make_session()
    done = [await add_turn(session, i) for i in range(1, 4)]
    running = await add_turn(session, 4, finished=False)
    socket = await open_socket(session.id, alice)
    frames = await socket.frames()
    assert turns_in(frames) == {running.id}, "finished turns are on the page already"
    assert len(frames) == 4  # its own events, and nothing else
    page = await open_socket(session.id, alice, query="turn=&seq=0")  # a page that showed no turn
    assert turns_in(await page.frames()) == {t.id for t in done} | {running.id}


async def test_a_replay_is_bounded_and_a_page_too_far_behind_is_told_to_reload(make_session, alice, settings):
    settings.APTIX_WS_REPLAY_MAX = 10
    session = await make_session()
    first = await add_turn(session, 1)
    for i in range(2, 6):
        await add_turn(session, i)  # 20 events in all
    socket = await open_socket(session.id, alice, query=f"turn={first.id}&seq=1")
    frames = await socket.frames()
    assert len(frames) == 1 and 'id="stream-notice"' in frames[0] and "too far behind" in frames[0]
    near = await add_turn(session, 6)
    page = await open_socket(session.id, alice, query=f"turn={near.id}&seq=2")  # 2 behind: replayed
    assert len(await page.frames()) == 2


async def test_sockets_are_capped_per_session_and_per_user(make_session, alice, settings):
    settings.APTIX_WS_MAX_PER_SESSION, settings.APTIX_WS_MAX_PER_USER = 2, 3
    one, two = await make_session(), await make_session()
    held = [await open_socket(one.id, alice), await open_socket(one.id, alice)]
    over = await open_socket(one.id, alice)
    assert await over.closed_with() == CLOSE_TOO_MANY
    held.append(await open_socket(two.id, alice))  # another session: within the user's cap
    assert await held[-1].communicator.receive_nothing(timeout=0.2)
    over = await open_socket(two.id, alice)
    assert await over.closed_with() == CLOSE_TOO_MANY
    await held[0].communicator.disconnect()  # a closed socket frees its place
    again = await open_socket(one.id, alice)
    assert await again.communicator.receive_nothing(timeout=0.2)


async def test_an_oversized_frame_closes_the_socket(make_session, alice):
    session = await make_session()
    socket = await open_socket(session.id, alice)
    await socket.communicator.send_to(text_data="ping")  # small: ignored
    assert await socket.communicator.receive_nothing(timeout=0.2)
    await socket.communicator.send_to(text_data="x" * (settings.APTIX_WS_MAX_MESSAGE + 1))
    assert await socket.closed_with() == CLOSE_TOO_BIG


@pytest.mark.parametrize("query", ["turn=%00&seq=1", "turn=abc&seq=1", "turn=&seq=99999999999"])
async def test_a_cursor_no_page_writes_closes_the_socket_before_any_query(make_session, alice, query):
    """On PostgreSQL a NUL byte or an out-of-range seq reached the database as an unhandled DataError."""
    session = await make_session()
    socket = await open_socket(session.id, alice, query=query)
    assert await socket.closed_with() == CLOSE_BAD_CURSOR
    again = await open_socket(session.id, alice, query="turn=&seq=0")  # the refused one holds no place
    assert await again.communicator.receive_nothing(timeout=0.2)


# --- access ends, the socket closes ----------------------------------------------------------------


async def test_logging_out_closes_that_logins_sockets(make_session, alice):
    session = await make_session()
    socket = await open_socket(session.id, alice)
    other_login = await open_socket(session.id, alice)  # another browser of the same user
    client = ServerLikeAsyncClient()
    name, key = socket.cookie.decode().split("=", 1)
    client.cookies[name] = key
    response = await client.post("/logout/")
    assert response.status_code == 302
    assert await socket.closed_with() == CLOSE_SIGNED_OUT
    assert await other_login.communicator.receive_nothing(timeout=0.3)  # still signed in there


@pytest.mark.parametrize(
    ("change", "code"),  # each cause its own code, so the page says what happened
    [
        ("membership", CLOSE_ACCESS_LOST),
        ("deactivated", CLOSE_SIGNED_OUT),
        ("password", CLOSE_SIGNED_OUT),
        ("session deleted", CLOSE_SESSION_GONE),
    ],
)
async def test_losing_access_closes_the_users_sockets(make_session, alice, team_a, change, code):
    session = await make_session()
    socket = await open_socket(session.id, alice)
    if change == "membership":
        await Membership.objects.filter(user=alice, team=team_a).adelete()
    elif change == "deactivated":
        alice.is_active = False
        await alice.asave()
    elif change == "password":
        alice.set_password("a new one")
        await alice.asave()
    else:
        await AgentSession.objects.filter(pk=session.id).adelete()
    assert await socket.closed_with() == code


async def test_an_unrelated_change_leaves_the_socket_open(make_session, alice, bob, team_a):
    session = await make_session()
    socket = await open_socket(session.id, alice)
    await Membership.objects.filter(user=bob, team=team_a).adelete()
    alice.first_name = "Alice"
    await alice.asave()
    assert await socket.communicator.receive_nothing(timeout=0.3)


async def test_the_periodic_check_closes_a_socket_whose_login_ended_without_a_signal(make_session, alice, settings):
    settings.APTIX_WS_RECHECK = 0.05
    session = await make_session()
    socket = await open_socket(session.id, alice)
    key = socket.cookie.decode().split("=", 1)[1]
    await sync_to_async(SessionStore(key).delete)()  # expired, or removed by clearsessions
    assert await socket.closed_with() == CLOSE_SIGNED_OUT
