"""Uploaded files in the 2 web + 2 worker deployment: a file uploaded to one web process is attached by
a turn posted to the other and queried by whichever worker runs it, so workers read what web
processes stored (one storage for all: here the same media directory, as a shared volume or an object
store would be across machines: docs/operations.md)."""

from __future__ import annotations

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import connection

from agents.models import Turn, TurnEvent
from agents.sessions import session_create
from aptix.tokens import api_token_create
from files.models import SessionFile
from tests.helpers import async_db
from tests.helpers import deployment as multi
from tests.helpers.file_uploads import SALES_CSV
from tests.helpers.worker_process import REDIS_URL

pytestmark = [pytest.mark.slow, async_db]

GROWTH = "SELECT region, q3 - q2 AS growth FROM sales ORDER BY growth DESC LIMIT 1"


@pytest.fixture
async def deployment(tmp_path):
    if not REDIS_URL or connection.vendor != "postgresql":
        pytest.skip("needs Redis and PostgreSQL (make test starts both)")
    shared = tmp_path / "shared-var"  # every process's media: where uploads are stored
    running = multi.deployment(
        tmp_path,
        redis_url=REDIS_URL,
        secret_key=django_settings.SECRET_KEY,
        heartbeat=2.0,
        APTIX_VAR_DIR=str(shared),
        APTIX_FILES_CACHE_DIR=str(tmp_path / "cache"),
    )
    async with running as started:
        try:
            yield started
        finally:
            for log in started.logs():
                print(f"--- {log}:", *multi.warnings_in(log), sep="\n")


async def test_a_turn_on_one_web_process_queries_a_file_uploaded_to_the_other(deployment, alice, team_a):
    session = await sync_to_async(session_create)(team=team_a, user=alice, execution="agent", mode="data-analysis")
    _, token = await sync_to_async(api_token_create)(user=alice, name="files")
    auth = {"Authorization": f"Bearer {token}"}
    first, second = deployment.webs
    async with httpx2.AsyncClient(base_url=first.url, timeout=60) as client:
        uploaded = await client.post("/api/v1/files", files={"file": ("sales.csv", SALES_CSV)}, headers=auth)
    assert uploaded.status_code == 201, uploaded.text
    file_id = uploaded.json()["fileId"]

    deployment.model.reply("", tool_calls=[("files_query", {"sql": GROWTH})])
    deployment.model.reply("North grew fastest, by 50.")
    async with httpx2.AsyncClient(base_url=second.url, timeout=60) as client:
        response = await client.post(
            "/api/v1/agent/execute",
            json={"conversationId": session.id, "message": "Which region grew fastest?", "files": [file_id]},
            headers=auth,
        )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "completed" and body["answer"] == "North grew fastest, by 50."
    turn = await Turn.objects.aget(pk=body["turnId"])
    assert turn.worker  # a worker ran it, not the web process
    result = await TurnEvent.objects.aget(turn=turn, type="tool.result")
    assert result.payload["ok"] and "North" in result.payload["result"] and "50" in result.payload["result"]
    assert (await SessionFile.objects.aget(pk=file_id)).session_id == session.id
