"""The catalog test runs API: a curator starts a run (it goes on in the background), follows it to
its results, stops and deletes it; anyone else is refused before anything is read, and a bad field is
named."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings

from agents.catalog_tests import STAY
from agents.catalog_tests.execute import test_runs_wait as runs_wait
from agents.models import CatalogTestRun
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from aptix.models import Membership
from aptix.tokens import api_token_create
from modes.models import AgentMode
from modes.proposal import proposal_text
from tests.helpers import ServerLikeAsyncClient, async_db

pytestmark = [async_db, pytest.mark.usefixtures("no_limits")]
RUNS = "/api/v1/catalog/test-runs"


@pytest.fixture
def no_limits():
    with override_settings(APTIX_RATE_TURNS=None, APTIX_RATE_API=None, APTIX_RATE_BAD_TOKENS=None):
        yield


@pytest.fixture
async def curator_token(curator, team_a):
    return await sync_to_async(_curator_token)(curator, team_a)


def _curator_token(curator, team_a):
    Membership.objects.create(team=team_a, user=curator, role=Membership.Role.MEMBER)
    for key in ("general", "ddr-authoring", "workflow-authoring"):
        AgentMode.objects.filter(key=key).update(example_utterances=[], test_utterances=[])
    AgentMode.objects.filter(key="data-analysis").update(
        example_utterances=["Chart revenue by month"], test_utterances=["Plot the churn"]
    )
    return api_token_create(user=curator, name="ci")[1]


@pytest.fixture
async def alice_token(alice):
    return (await sync_to_async(api_token_create)(user=alice, name="ci"))[1]


async def call(method: str, url: str, token: str | None, body=None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    client = ServerLikeAsyncClient()
    if method == "GET":
        response = await client.get(url, headers=headers)
    elif method == "DELETE":
        response = await client.delete(url, headers=headers)
    else:
        raw = body if isinstance(body, str) else json.dumps(body if body is not None else {})
        response = await client.post(url, data=raw, content_type="application/json", headers=headers)
    return response.status_code, json.loads(response.content) if response.content else {}


async def test_a_curator_runs_the_catalogs_routing_and_reads_the_results(curator_token, model, llm):
    model.reply(proposal_text("Data Analysis", "data-analysis"))
    model.reply("Here is a plot.")
    with override_settings(APTIX_CATALOG_TEST_CONCURRENCY=1), use_runner(LocalRunner()):
        status, started = await call("POST", RUNS, curator_token, {"catalog": "published", "kind": "routing"})
        assert status == 202 and started["status"] == "queued" and started["id"]
        await runs_wait()
    status, body = await call("GET", f"{RUNS}/{started['id']}", curator_token)
    assert status == 200
    assert (body["status"], body["accuracy"], body["progress"]) == ("done", 0.5, {"done": 2, "total": 2})
    assert [(c["utterance"], c["expected"], c["got"], c["ok"]) for c in body["cases"]] == [
        ("Chart revenue by month", "data-analysis", "data-analysis", True),
        ("Plot the churn", "data-analysis", STAY, False),
    ]
    assert body["modes"] == {
        "data-analysis": {"precision": 1.0, "recall": 0.5},
        STAY: {"precision": 0.0, "recall": None},
    }
    assert body["checks"] == [] and body["versions"]["published"]["data-analysis"] == 1
    status, listed = await call("GET", RUNS, curator_token)
    assert status == 200 and [run["id"] for run in listed["runs"]] == [started["id"]]
    status, _ = await call("DELETE", f"{RUNS}/{started['id']}", curator_token)
    assert status == 204 and not await CatalogTestRun.objects.aexists()


async def test_without_the_catalog_permission_or_a_token_nothing_is_read(curator_token, alice_token):
    run = await CatalogTestRun.objects.acreate(
        team_id=await sync_to_async(lambda: Membership.objects.first().team_id)(),
        started_by_id=await sync_to_async(lambda: Membership.objects.first().user_id)(),
    )
    for method, url in (("POST", RUNS), ("GET", RUNS), ("GET", f"{RUNS}/{run.pk}"), ("POST", f"{RUNS}/{run.pk}/stop")):
        status, body = await call(method, url, alice_token, {})
        assert status == 403, (method, url)
        assert body["error"]["message"] == "Catalog tests need the permission to change or to publish agent modes."
        status, _ = await call(method, url, None, {})
        assert status == 401
    status, _ = await call("DELETE", f"{RUNS}/{run.pk}", alice_token)
    assert status == 403 and await CatalogTestRun.objects.aexists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"catalog": "everything"}, "catalog"),
        ({"kind": "all"}, "kind"),
        ({"model": "no-such-model"}, "model"),
        ({"model": 3}, "model"),
        ({"modell": "x"}, "modell"),
    ],
)
async def test_a_bad_field_is_a_400_naming_it_and_starts_nothing(curator_token, body, field):
    status, answer = await call("POST", RUNS, curator_token, body)
    assert status == 400 and answer["error"]["field"] == field
    assert not await CatalogTestRun.objects.aexists()


async def test_stop_and_unknown_runs(curator_token):
    status, answer = await call("GET", f"{RUNS}/nope", curator_token)
    assert status == 404 and answer["error"]["message"] == "No catalog test run 'nope'."
    with use_runner(LocalRunner()):
        run = await CatalogTestRun.objects.acreate(
            team_id=await sync_to_async(lambda: Membership.objects.first().team_id)(),
            started_by_id=await sync_to_async(lambda: Membership.objects.first().user_id)(),
            status="running",
        )
        status, answer = await call("DELETE", f"{RUNS}/{run.pk}", curator_token)
        assert status == 409 and "stop it first" in answer["error"]["message"]
        status, answer = await call("POST", f"{RUNS}/{run.pk}/stop", curator_token)
        assert status == 200 and answer == {"id": run.pk, "status": "running", "stopRequested": True}
