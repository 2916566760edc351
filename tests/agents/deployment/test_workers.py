"""The multi-process run path: with REDIS_URL a web process puts turns on the run queue (a Redis
Stream) for `manage.py aptix_worker`, a real subprocess here, which claims each run in the database,
streams from the model, writes the events and broadcasts them back over the Redis channel layer;
cancelling from the web process stops the worker's run.

Needs a Redis server (`make test` starts one and exports APTIX_TEST_REDIS_URL) and PostgreSQL (the
worker must share the test database; SQLite's test database lives in this process's memory).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async

from agents.models import Turn
from agents.run.claims import lease
from agents.runner import get_runner
from agents.turns import ERROR_INTERRUPTED, turn_cancel, turn_end_orphans, turn_start
from aptix.tokens import api_token_create
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.worker_process import HEARTBEAT

pytestmark = [pytest.mark.slow, async_db]


async def _until_streaming(worker) -> None:
    """The worker's run is streaming the reply: the scripted model (in this process) got its request."""
    await asyncio.wait_for(worker.requested.wait(), timeout=30)


async def test_api_turn_runs_in_a_worker_process(worker, alice):
    worker.reply("Hello from a worker.")
    _, secret = await sync_to_async(api_token_create)(user=alice)
    response = await ServerLikeAsyncClient().post(
        "/api/v1/agent/execute",
        data=json.dumps({"message": "Hi", "execution": "ask"}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    body = json.loads(response.content)
    assert response.status_code == 200, body
    assert body["status"] == "completed" and body["answer"] == "Hello from a worker."
    assert worker.calls == 1  # the worker, not this process, asked the model
    turn = await Turn.objects.aget(pk=body["turnId"])
    types = [e.type async for e in turn.events.order_by("seq")]
    assert types[0] == "turn.started" and types[-1] == "turn.completed"


async def test_cancel_from_the_web_process_stops_the_worker_run(worker, redis_layer, make_session):
    worker.reply("word " * 400, chunk_delay=0.05)  # ~20 s of streaming unless stopped
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Talk for a long time")
    await get_runner().start(turn.id)
    await _until_streaming(worker)
    await turn_cancel(turn=turn)
    ended = await asyncio.wait_for(get_runner().wait(turn.id), timeout=10)
    assert ended.status == Turn.Status.CANCELLED
    await asyncio.wait_for(worker.stream_cancelled.wait(), timeout=5)  # the model stream was abandoned
    final = await ended.events.order_by("-seq").afirst()
    assert final.type == "turn.cancelled"


async def test_a_worker_killed_mid_turn_does_not_leave_the_turn_running(worker, redis_layer, make_session, alice):
    worker.reply("word " * 400, chunk_delay=0.05)  # ~20 s of streaming
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Talk for a long time")
    await get_runner().start(turn.id)
    await _until_streaming(worker)
    # While the worker lives, its heartbeat keeps the turn: the session page leaves it running.
    first = (await Turn.objects.aget(pk=turn.id)).heartbeat_at
    assert first is not None
    async with asyncio.timeout(10):  # 20 heartbeats: a worker that stopped beating fails here, not hangs
        while (await Turn.objects.aget(pk=turn.id)).heartbeat_at == first:
            await asyncio.sleep(HEARTBEAT / 5)  # the next heartbeat is a matter of time, not of an event
    client = ServerLikeAsyncClient()
    await client.aforce_login(alice)
    assert (await client.get(f"/sessions/{session.id}/")).status_code == 200
    assert (await Turn.objects.aget(pk=turn.id)).status == Turn.Status.RUNNING

    worker.process.kill()  # SIGKILL: no clean-up of any kind
    await asyncio.to_thread(worker.process.wait, 10)
    # Its heartbeat stops; once it is older than the lease the runner's next sweep (a timer in the
    # serving process; pages never write) ends it, and the session page shows why.
    held = await Turn.objects.aget(pk=turn.id)
    assert held.worker and held.lease_until  # claimed by the worker, its lease renewed by the heartbeat
    await Turn.objects.filter(pk=turn.id).aupdate(lease_until=held.lease_until - lease())  # the lease runs out
    await sync_to_async(turn_end_orphans)()  # the sweep's tick
    response = await client.get(f"/sessions/{session.id}/")
    turn = await Turn.objects.aget(pk=turn.id)
    assert turn.status == Turn.Status.FAILED and turn.error == ERROR_INTERRUPTED and turn.finished_at
    last = await turn.events.order_by("-seq").afirst()
    assert last.type == "turn.failed" and last.payload["kind"] == "interrupted"
    assert ERROR_INTERRUPTED.split(" because")[0] in response.content.decode()
    # The session is usable again.
    await sync_to_async(turn_start)(session=session, text="Again")


async def test_a_new_worker_ends_a_dead_workers_turn_before_any_message(worker, redis_layer, make_session):
    """The sweep starts with the worker, not with its first turn."""
    worker.reply("word " * 400, chunk_delay=0.05)  # ~20 s of streaming
    session = await make_session()
    turn = await sync_to_async(turn_start)(session=session, text="Talk for a long time")
    await get_runner().start(turn.id)
    await _until_streaming(worker)
    await worker.restart()  # SIGKILL mid-turn; the new worker gets no message
    async with asyncio.timeout(lease().total_seconds() + 20):
        while (await Turn.objects.aget(pk=turn.id)).status == Turn.Status.RUNNING:
            await asyncio.sleep(HEARTBEAT / 5)  # another process ends it: the database is where to look
    turn = await Turn.objects.aget(pk=turn.id)
    assert turn.status == Turn.Status.FAILED and turn.error == ERROR_INTERRUPTED


async def test_an_approval_survives_every_process_and_resumes_on_a_new_worker(worker, alice):
    """The turn waits for approval with no process holding it: the worker that ran it is killed, the
    orphan sweep leaves the waiting turn alone, and the decision (through the web process's API)
    resumes the run on a freshly started worker."""
    first = worker.reply(
        "", tool_calls=[("agent_change_mode", {"mode": "data-analysis", "branch": False, "reason": "Charts."})]
    )
    _, secret = await sync_to_async(api_token_create)(user=alice)
    client = ServerLikeAsyncClient()
    headers = {"Authorization": f"Bearer {secret}"}

    async def execute(body):
        response = await client.post(
            "/api/v1/agent/execute", data=json.dumps(body), content_type="application/json", headers=headers
        )
        return json.loads(response.content)

    body = await execute({"message": "Revenue by month?", "execution": "agent"})
    assert body["status"] == "awaiting_approval", body
    await worker.restart()
    turn = await Turn.objects.aget(pk=body["turnId"])
    await Turn.objects.filter(pk=turn.id).aupdate(lease_until=turn.lease_until - lease())  # long gone
    assert await sync_to_async(turn_end_orphans)() == []  # waiting is not orphaned
    assert (await Turn.objects.aget(pk=turn.id)).status == Turn.Status.AWAITING_APPROVAL

    worker.reply("Switched to Data Analysis.")
    worker.reply("Revenue by month: 10, 12, 15.")  # the consented switch carries the request on
    decision = {"toolCallId": first.tool_calls[0].id, "decision": "approve"}
    body = await execute({"conversationId": body["conversationId"], "approvals": [decision]})
    assert body["status"] == "completed" and body["mode"] == "data-analysis", body
    assert body["answer"] == "Switched to Data Analysis."
    assert body["followUp"]["answer"] == "Revenue by month: 10, 12, 15." and worker.calls == 3
