"""Benchmark (and attack re-run): many websockets to one long session.

The adversarial run opened 100 sockets without a cursor to one 2,598-event session; each socket had
the whole session replayed and rendered (Daphne: 394 MB → 1.4 GB, 312 s of rendering). This opens
`--sockets` sockets, as one user, through the real ASGI application (origin check, session cookie,
the consumer) to a session of `--turns` finished turns of `--events` events each, in three ways: with
no cursor (the attack), with a cursor at the first event (a crafted cursor), and with the page's own
cursor (a real reload). Printed for each: how many sockets were kept and refused (the per-session
cap), the frames and bytes they received, the wall and CPU time, and the process's peak RSS. Raise
APTIX_WS_MAX_PER_SESSION / APTIX_WS_MAX_PER_USER to see the replay bound without the caps.

    .venv/bin/python bench/ws_replay.py [--sockets 100] [--turns 100] [--events 26]
(SQLite in a temp dir when DATABASE_URL is unset.)
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import time

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django(
    APTIX_MCP_AUTOSTART="false",
    APTIX_RUN_SWEEP="false",
    LOG_LEVEL="ERROR",  # not a line per refused socket
)

from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import call_command
from django.utils import timezone

from agents.models import Turn, TurnEvent
from agents.sessions import session_create
from agents.web.streams import CLOSE_TOO_MANY
from aptix.asgi import application
from aptix.teams import team_ensure

IDLE = 0.3  # seconds without a frame that end a socket's replay
ANSWER = "Revenue rose in the north and fell in the south; the table below has the figures. " * 3


def build_session(turns: int, events: int) -> tuple[str, str, str, int]:
    """A session of finished turns: turn.started, step.started, deltas, model.message, completed."""
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-replay")
    team = team_ensure(name="Bench replay", owner=user)
    session = session_create(team=team, user=user, execution="ask")
    now = timezone.now()
    rows = Turn.objects.bulk_create(
        Turn(
            session=session,
            index=i,
            user_message=f"Question {i}",
            answer=ANSWER,
            status=Turn.Status.COMPLETED,
            mode=session.mode,
            execution="ask",
            started_at=now,
            finished_at=now,
        )
        for i in range(1, turns + 1)
    )
    deltas = max(0, events - 4)
    batch = []
    for turn in rows:
        payloads = [("turn.started", {"mode": session.mode, "execution": "ask"}), ("step.started", {"step": 1})]
        payloads += [("model.delta", {"text": ANSWER[i * 8 : i * 8 + 8]}) for i in range(deltas)]
        payloads += [("model.message", {"content": ANSWER}), ("turn.completed", {"answer": ANSWER})]
        batch += [TurnEvent(turn=turn, seq=i, type=t, payload=p) for i, (t, p) in enumerate(payloads, 1)]
    TurnEvent.objects.bulk_create(batch, batch_size=2000)
    store = SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    cookie = f"{settings.SESSION_COOKIE_NAME}={store.session_key}"
    return session.id, cookie, f"turn={rows[0].id}&seq=1", rows[-1].events.count()


async def attack(session_id: str, cookie: str, query: str, sockets: int) -> dict:
    headers = [(b"origin", b"http://127.0.0.1"), (b"cookie", cookie.encode())]
    path = f"/ws/sessions/{session_id}/" + (f"?{query}" if query else "")
    communicators = [WebsocketCommunicator(application, path, headers=headers) for _ in range(sockets)]
    frames = size = accepted = refused = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for communicator in communicators:
        connected, _ = await communicator.connect(timeout=60)
        accepted += bool(connected)
    for communicator in communicators:
        while not await communicator.receive_nothing(timeout=IDLE):
            output = await communicator.receive_output()
            if output["type"] == "websocket.send":
                frames += 1
                size += len(output.get("text") or "")
            elif output["type"] == "websocket.close":
                refused += output.get("code") == CLOSE_TOO_MANY
                break
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall - IDLE * sockets  # less the idle waits
    for communicator in communicators:
        await communicator.disconnect()
    return {
        "accepted": accepted - refused,
        "refused": refused,
        "frames": frames,
        "bytes": size,
        "cpu": cpu,
        "wall": max(wall, 0.0),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sockets", type=int, default=100)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--events", type=int, default=26)
    args = parser.parse_args()
    session_id, cookie, crafted, last_seq = build_session(args.turns, args.events)
    total = TurnEvent.objects.filter(turn__session_id=session_id).count()
    last_turn = Turn.objects.filter(session_id=session_id).order_by("-index").values_list("id", flat=True)[0]
    print(f"session: {args.turns} turns, {total} events; {args.sockets} sockets of one user per case")
    cases = [
        ("no cursor", ""),
        ("crafted cursor (first event)", crafted),
        ("page cursor", f"turn={last_turn}&seq={last_seq}"),
    ]
    for label, query in cases:
        figures = asyncio.run(attack(session_id, cookie, query, args.sockets))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{label:30} kept {figures['accepted']:4}  refused {figures['refused']:4}  frames {figures['frames']:7}  "
            f"{figures['bytes'] / 1e6:8.1f} MB sent  cpu {figures['cpu']:7.2f} s  wall {figures['wall']:7.2f} s  "
            f"peak RSS {rss:6.0f} MB"
        )


if __name__ == "__main__":
    main()
