"""One web process (`manage.py aptix_serve`, no Redis, no workers) on PostgreSQL with a pool of only 4
connections carries a burst: 50 API turns posted at once, each watched on a websocket, all complete,
none refused, none failed, none run twice, and every client sees every event of its turn once. It keeps
the guarantee; the defect it guards against (each waiting request's looks at its turn kept a pooled
connection) is reproduced precisely by tests/agents/run/test_wait_connection.py and by
`bench/scale_out.py --single` (12 of 50 completed before, 50 of 50 after): on this machine the
test's burst did not starve the pool even before the fix."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import connection

from agents.models import TurnEvent
from agents.sessions import session_create
from aptix.tokens import api_token_create
from tests.helpers import async_db
from tests.helpers import deployment as multi
from tests.helpers.deployment import requests_per_message, watch
from tests.helpers.streams import session_cookie

pytestmark = [pytest.mark.slow, async_db]

TURNS = 50


@pytest.fixture
async def one_process(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (make test starts it)")
    running = multi.deployment(
        tmp_path,
        redis_url="",
        secret_key=django_settings.SECRET_KEY,
        heartbeat=2.0,
        webs=1,
        workers=0,
        APTIX_DB_POOL="true",
        APTIX_DB_POOL_MAX="4",
        APTIX_RATE_TURNS="off",
        APTIX_RATE_API="off",
        APTIX_WS_MAX_PER_USER="200",
    )
    async with running as started:
        try:
            yield started
        finally:
            for log in started.logs():  # shown when the test fails
                print(f"--- {log}:", *multi.warnings_in(log), sep="\n")


async def test_fifty_turns_at_once_on_one_process_with_a_pool_of_four_all_complete(one_process, alice, team_a):
    model, (web,) = one_process.model, one_process.webs
    make = sync_to_async(session_create)
    sessions = [(await make(team=team_a, user=alice, execution="ask")).id for _ in range(TURNS)]
    for _ in sessions:
        model.reply(pieces=["word "] * 100, chunk_delay=0.02, paced=True)  # 2 s of streaming each, all at once
    cookie = await session_cookie(alice)
    _, token = await sync_to_async(api_token_create)(user=alice)
    opened = [asyncio.Event() for _ in sessions]
    watchers = [asyncio.create_task(watch(web, sid, cookie, opened[i])) for i, sid in enumerate(sessions)]
    await asyncio.wait_for(asyncio.gather(*(event.wait() for event in opened)), timeout=60)

    async def post(i: int, session_id: str, client: httpx2.AsyncClient) -> tuple[int, dict]:
        response = await client.post(
            "/api/v1/agent/execute",
            json={"conversationId": session_id, "message": f"burst {i}", "execution": "ask"},
            headers={"Authorization": f"Bearer {token}"},
        )
        return response.status_code, response.json()

    limits = httpx2.Limits(max_connections=TURNS + 10)
    async with httpx2.AsyncClient(base_url=web.url, timeout=120, limits=limits) as client:
        answers = await asyncio.gather(*(post(i, sid, client) for i, sid in enumerate(sessions)))
    assert Counter(status for status, _ in answers) == {200: TURNS}, [body for status, body in answers if status != 200]
    assert Counter(body["status"] for _, body in answers) == {"completed": TURNS}
    seen = await asyncio.wait_for(asyncio.gather(*watchers), timeout=60)
    asked = requests_per_message(model)
    assert all(asked[f"burst {i}"] == 1 for i in range(TURNS)), "a turn ran twice, or never"
    for (_, body), (seqs, status) in zip(answers, seen, strict=True):
        stored = [e async for e in TurnEvent.objects.filter(turn_id=body["turnId"]).values_list("seq", flat=True)]
        assert status == "completed" and seqs == sorted(stored) == list(range(1, len(stored) + 1))
