"""A catalog test run on 1 web process and 2 workers (real subprocesses on PostgreSQL and Redis, a
scripted model on loopback): the web process that took the API request drives the run, each case's
turn runs on a worker, and the results are exactly what the script implies."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import connection

from agents.catalog_tests import STAY
from agents.models import Turn
from aptix.models import Membership
from aptix.tokens import api_token_create
from modes.models import AgentMode
from modes.proposal import proposal_text
from tests.helpers import async_db
from tests.helpers import deployment as multi
from tests.helpers.worker_process import REDIS_URL

pytestmark = [pytest.mark.slow, async_db]


@pytest.fixture
async def deployment(tmp_path):
    if not REDIS_URL or connection.vendor != "postgresql":
        pytest.skip("needs Redis and PostgreSQL (make test starts both)")
    running = multi.deployment(
        tmp_path,
        redis_url=REDIS_URL,
        secret_key=django_settings.SECRET_KEY,
        heartbeat=2.0,
        webs=1,
        workers=2,
        APTIX_RATE_TURNS="off",
        APTIX_RATE_API="off",
        APTIX_AUTO_TITLES="false",
        APTIX_CATALOG_TEST_CONCURRENCY="1",  # the script's order is the cases' order
    )
    async with running as started:
        try:
            yield started
        finally:
            for log in started.logs():  # shown when a test fails
                print(f"--- {log}:", *multi.warnings_in(log), sep="\n")


def _catalog(curator, team) -> str:
    Membership.objects.create(team=team, user=curator, role=Membership.Role.MEMBER)
    AgentMode.objects.update(example_utterances=[], test_utterances=[])
    AgentMode.objects.filter(key="general").update(example_utterances=["Hello there"])
    AgentMode.objects.filter(key="data-analysis").update(
        example_utterances=["Chart revenue by month"], test_utterances=["Sum the sales per region"]
    )
    AgentMode.objects.filter(key="ddr-authoring").update(example_utterances=["Write a design decision record"])
    return api_token_create(user=curator, name="ci")[1]


async def test_a_run_on_one_web_and_two_workers_gives_what_the_script_implies(deployment, curator, team_a):
    token = await sync_to_async(_catalog)(curator, team_a)
    model = deployment.model
    model.reply("Hi!")  # Hello there → stay (right)
    model.reply(proposal_text("DDR Authoring", "ddr-authoring"))  # Write a DDR → ddr-authoring (right)
    model.reply(proposal_text("DDR Authoring", "ddr-authoring"))  # Chart revenue → ddr-authoring (wrong)
    model.reply(proposal_text("Data Analysis", "data-analysis"))  # Sum the sales → data-analysis (right)
    web = deployment.webs[0]
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(base_url=web.url, timeout=30) as client:
        started = await client.post("/api/v1/catalog/test-runs", json={"kind": "routing"}, headers=headers)
        assert started.status_code == 202, started.text
        run_id = started.json()["id"]
        async with asyncio.timeout(60):
            while True:  # another process's run: its row is all there is to watch
                body = (await client.get(f"/api/v1/catalog/test-runs/{run_id}", headers=headers)).json()
                if body["status"] not in ("queued", "running"):
                    break
                await asyncio.sleep(0.2)
    assert body["status"] == "done", body
    assert [(c["utterance"], c["expected"], c["got"], c["ok"]) for c in body["cases"]] == [
        ("Hello there", STAY, STAY, True),
        ("Write a design decision record", "ddr-authoring", "ddr-authoring", True),
        ("Chart revenue by month", "data-analysis", "ddr-authoring", False),
        ("Sum the sales per region", "data-analysis", "data-analysis", True),
    ]
    assert body["accuracy"] == 0.75
    assert body["matrix"] == {
        STAY: {STAY: 1},
        "ddr-authoring": {"ddr-authoring": 1},
        "data-analysis": {"ddr-authoring": 1, "data-analysis": 1},
    }
    assert body["modes"]["ddr-authoring"] == {"precision": 0.5, "recall": 1.0}
    workers = {t.worker async for t in Turn.objects.filter(session__catalog_run_id=run_id)}
    assert len(model.requests) == 4 and "" not in workers and workers  # every case ran on a worker
