"""A scheduled run on a worker that needs an approval: the worker's clock claims the time and runs the
turn; the call of the notes server's writing tool (a real MCP server the worker starts) pauses it, and
the owner's inbox has the item; approving it from here (a web process) hands the run to the run queue,
a worker resumes it, the tool runs, and the answer lands in the run's session."""

from __future__ import annotations

import asyncio
import json
import time
from functools import partial

import pytest
from asgiref.sync import sync_to_async

from agents.approvals import UserDecision, approval_decide
from agents.models import Turn
from agents.submit import turn_submit
from automations.models import AutomationRun, InboxItem
from automations.services import automation_create, automation_pause
from tests.helpers import async_db
from tests.helpers.deployment import Worker, worker_env
from tests.helpers.scripted_model import ScriptedModel, loopback_server
from tests.helpers.worker_process import REDIS_URL, redis_layer  # noqa: F401 - the fixture

pytestmark = [pytest.mark.slow, async_db]


async def until(check, timeout: float = 60.0):
    """Until `check()` answers something (another process writes it: nothing to await here)."""
    deadline = time.monotonic() + timeout
    while not (found := await check()):
        assert time.monotonic() < deadline, f"{check.__name__} found nothing in {timeout} s"
        await asyncio.sleep(0.25)
    return found


@pytest.fixture
async def notes_worker(redis_layer, tmp_path, settings):  # noqa: F811 - the fixture imported above
    """An `aptix_worker` that keeps the automations' clock every second and starts the notes server."""
    config = tmp_path / "mcp.json"
    notes = tmp_path / "notes.md"
    command = {"command": "python", "args": ["-m", "tools.notes_mcp", str(notes)], "cwd": str(settings.BASE_DIR)}
    config.write_text(json.dumps({"mcpServers": {"notes": command}}))
    model = ScriptedModel()
    async with loopback_server(model) as url:
        env = worker_env(
            url,
            REDIS_URL,
            SECRET_KEY=settings.SECRET_KEY,
            APTIX_MCP_AUTOSTART="true",
            APTIX_MCP_CONFIG=str(config),
            APTIX_AUTOMATIONS_TICK="1",
        )
        log = tmp_path / "worker.log"
        worker = Worker(model, env, log)
        try:

            async def notes_ready():  # its own log says so (another process: nothing to await here)
                return log.exists() and 'MCP server \\"notes\\": ready' in log.read_text()

            await until(notes_ready)
            yield worker, notes
        finally:
            await worker.stop()
            print((tmp_path / "worker.log").read_text()[-3000:])


async def test_a_scheduled_run_waits_in_the_inbox_and_resumes_on_a_worker(notes_worker, alice, team_a):
    worker, notes = notes_worker
    worker.model.reply("", tool_calls=[("notes__add_note", {"text": "Call the supplier on Monday"})])
    worker.model.reply("Added the note.")
    automation, _ = await sync_to_async(automation_create)(
        user=alice,
        team=team_a,
        data={"name": "Notes", "prompt": "note: call the supplier", "schedule": {"cron": "* * * * * */2"}},
    )

    async def item():
        return await InboxItem.objects.select_related("approval", "run").filter(user=alice).afirst()

    waiting = await until(item)  # the worker's MCP server starts, then its clock ticks
    await sync_to_async(automation_pause)(automation=automation, by=alice)  # no more times
    run = await AutomationRun.objects.aget(pk=waiting.run_id)
    assert (run.trigger, run.status) == ("schedule", "awaiting_approval")
    assert waiting.approval.tool == "notes__add_note" and waiting.kind == "approval"
    turn = await Turn.objects.aget(pk=run.turn_id)
    decide = partial(approval_decide, turn=turn, decisions=[UserDecision(waiting.approval.tool_call_id, True)])

    def record():
        return turn if decide(user=alice) else None

    await turn_submit(record)  # the WorkerRunner of redis_layer: onto the run queue

    async def ended():
        return (await AutomationRun.objects.aget(pk=run.pk)).is_final

    await until(ended)
    run = await AutomationRun.objects.aget(pk=run.pk)
    turn = await Turn.objects.aget(pk=run.turn_id)
    assert run.status == "completed" and turn.answer == "Added the note." and turn.worker
    assert "Call the supplier on Monday" in notes.read_text()
    assert not await InboxItem.objects.filter(user=alice, resolved_at__isnull=True).aexists()
