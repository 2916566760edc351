"""The curators' catalog API: versions, drafts, publish (and restore), review and diff, with its
permissions; and the version each turn ran with, in the execute answer and the mode history."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group
from django.test import override_settings

from agents.models import Turn
from agents.run.trace import turn_trace
from agents.sessions import session_create, session_switch_mode
from aptix.tokens import api_token_create
from modes.models import AgentMode, ModeHistory
from tests.helpers import ServerLikeAsyncClient, async_db

pytestmark = [async_db, pytest.mark.usefixtures("no_limits")]
BASE = "/api/v1/catalog/modes/general"


@pytest.fixture
def no_limits():
    with override_settings(APTIX_RATE_TURNS=None, APTIX_RATE_API=None, APTIX_RATE_BAD_TOKENS=None):
        yield


async def _token(user) -> str:
    return (await sync_to_async(api_token_create)(user=user, name="ci"))[1]


@pytest.fixture
async def curator_token(curator):
    return await _token(curator)


@pytest.fixture
async def reviewer_token(django_user_model, password):
    def make():
        user = django_user_model.objects.create_user("rita", password=password, is_staff=True)
        user.groups.add(Group.objects.get(name="Catalog publishers"))
        return user

    return await _token(await sync_to_async(make)())


@pytest.fixture
async def drafter_token(django_user_model, password):
    def make():
        user = django_user_model.objects.create_user("dan", password=password, is_staff=True)
        user.groups.add(Group.objects.get(name="Catalog curators"))
        return user

    return await _token(await sync_to_async(make)())


async def call(method: str, url: str, token: str | None, body=None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    client = ServerLikeAsyncClient()
    if method == "GET":
        response = await client.get(url, headers=headers)
    else:
        raw = json.dumps(body if body is not None else {})
        response = await client.post(url, data=raw, content_type="application/json", headers=headers)
    return response.status_code, json.loads(response.content)


async def test_a_draft_is_published_and_the_next_turn_runs_with_it(llm, model, alice, curator_token):
    alice_token = await _token(alice)
    model.reply("Hello.")
    first = await call("POST", "/api/v1/agent/execute", alice_token, {"execution": "ask", "message": "Hi"})
    assert first[1]["modeVersion"] == 1

    status, body = await call("POST", f"{BASE}/drafts", curator_token, {"prompt": "Answer in haiku.", "note": "x"})
    assert (status, body) == (201, {"version": 2, "state": "draft"})
    model.reply("Still plain.")
    status, answer = await call("POST", "/api/v1/agent/execute", alice_token, {"execution": "ask", "message": "Hi"})
    assert answer["modeVersion"] == 1  # a draft changes nothing for anyone
    assert "Answer in haiku." not in model.requests[-1]["messages"][0]["content"]

    status, body = await call("POST", f"{BASE}/versions/2/publish", curator_token)
    assert (status, body["version"], body["state"]) == (200, 2, "published")
    model.reply("Autumn moon.")
    status, answer = await call("POST", "/api/v1/agent/execute", alice_token, {"execution": "ask", "message": "Hi"})
    assert answer["modeVersion"] == 2
    assert "Answer in haiku." in model.requests[-1]["messages"][0]["content"]
    trace = await sync_to_async(lambda: turn_trace(Turn.objects.get(pk=answer["turnId"])))()
    assert (trace.mode_version, trace.mode_draft) == (2, False)  # what the admin's trace shows

    status, body = await call("GET", f"{BASE}/versions", curator_token)
    assert [(v["version"], v["state"]) for v in body["versions"]] == [(2, "published"), (1, "superseded")]
    status, body = await call("GET", f"{BASE}/diff?from=1&to=2", curator_token)
    assert status == 200 and [c["name"] for c in body["changes"]] == ["prompt"]
    assert "+Answer in haiku." in body["changes"][0]["lines"]

    status, body = await call("POST", f"{BASE}/versions/1/publish", curator_token)  # restore
    assert (status, body["version"], body["restoredFrom"]) == (200, 3, 1)
    mode = await AgentMode.objects.aget(key="general")
    assert mode.version == 3 and "Answer in haiku." not in mode.system_prompt


async def test_permissions_and_bad_fields(alice, curator_token, drafter_token):
    alice_token = await _token(alice)
    for method, url in [("GET", f"{BASE}/versions"), ("POST", f"{BASE}/drafts"), ("GET", f"{BASE}/diff")]:
        status, body = await call(method, url, alice_token, {"prompt": "x"})
        assert status == 403, (url, body)
    assert (await call("GET", f"{BASE}/versions", None))[0] == 401

    status, body = await call("POST", f"{BASE}/drafts", curator_token, {"colour": "red"})
    assert (status, body["error"]["field"]) == (400, "colour")
    status, body = await call("POST", f"{BASE}/drafts", curator_token, {"tools": "sql.*"})
    assert (status, body["error"]["field"]) == (400, "tools")
    status, body = await call("POST", f"{BASE}/drafts", curator_token, {"execution": "sometimes"})
    assert (status, body["error"]["field"]) == (400, "execution")
    status, body = await call("POST", f"{BASE}/drafts", curator_token, {"teams": ["nowhere"]})
    assert (status, body["error"]["field"]) == (400, "teams")
    assert (await call("GET", "/api/v1/catalog/modes/nope/versions", curator_token))[0] == 404

    status, body = await call("POST", f"{BASE}/drafts", drafter_token, {"description": "Edited"})
    assert status == 201
    status, body = await call("POST", f"{BASE}/versions/{body['version']}/publish", drafter_token)
    assert status == 403 and "Can publish agent modes" in body["error"]["message"]


async def test_two_person_review_through_the_api(settings, curator_token, reviewer_token):
    settings.APTIX_CATALOG_REVIEW = "two-person"
    status, body = await call("POST", f"{BASE}/drafts", curator_token, {"summary": "Reviewed summary"})
    number = body["version"]
    status, body = await call("POST", f"{BASE}/versions/{number}/publish", curator_token)
    assert status == 409 and "waiting for review" in body["error"]["message"]
    status, body = await call("GET", f"{BASE}/versions", curator_token)
    assert body["versions"][0]["state"] == "pending"
    status, body = await call("POST", f"{BASE}/versions/{number}/approve", curator_token)
    assert status == 403  # never one's own
    status, body = await call("POST", f"{BASE}/versions/{number}/approve", reviewer_token, {"comment": "ok"})
    assert (status, body["state"], body["reviewer"]) == (200, "approved", "rita")
    status, body = await call("POST", f"{BASE}/versions/{number}/publish", curator_token)
    assert (status, body["state"]) == (200, "published")

    status, body = await call("POST", f"{BASE}/drafts", curator_token, {"summary": "Again"})
    status, body = await call("POST", f"{BASE}/versions/{body['version']}/reject", reviewer_token, {"comment": "no"})
    assert (status, body["state"], body["reviewComment"]) == (200, "rejected", "no")


async def test_mode_history_keeps_the_version_the_session_moved_to(alice, team_a, curator):
    def switch():
        from modes.versions import draft_save, version_publish

        version_publish(version=draft_save(mode="data-analysis", fields={}, author=curator), by=curator)
        session = session_create(team=team_a, user=alice, title="t")
        session_switch_mode(session=session, mode="data-analysis", user=alice)
        return ModeHistory.objects.get(session=session)

    entry = await sync_to_async(switch)()
    assert (entry.new_mode, entry.mode_version) == ("data-analysis", 2)


async def test_a_draft_carries_tests_and_checks_and_a_bad_check_is_named(curator_token):
    check = {"expect": {"tool": "agent_list_modes"}, "prompt": "What modes are there?"}
    status, body = await call("POST", f"{BASE}/drafts", curator_token, {"tests": ["Plan my week"], "checks": [check]})
    assert (status, body["state"]) == (201, "draft")
    status, body = await call("POST", f"{BASE}/versions/{body['version']}/publish", curator_token)
    assert status == 200
    mode = await AgentMode.objects.aget(key="general")
    assert mode.test_utterances == ["Plan my week"]
    assert mode.checks == [
        {"prompt": "What modes are there?", "execution": "ask", "expect": {"tool": "agent_list_modes"}}
    ]

    bad = [check, {"prompt": "Hi", "expect": {"tool": 3}}]
    status, body = await call("POST", f"{BASE}/drafts", curator_token, {"checks": bad})
    assert (status, body["error"]["field"]) == (400, "checks")
    assert "checks[1].expect.tool: expected a string" in body["error"]["message"]
    status, body = await call("POST", f"{BASE}/drafts", curator_token, {"tests": "Plan my week"})
    assert (status, body["error"]["field"]) == (400, "tests")
