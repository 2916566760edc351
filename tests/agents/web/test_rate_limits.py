"""Request rate limits (aptix/ratelimits.py, aptix/bearer.py): turns per user (web and API alike), API
requests per token and invalid bearer tokens per address, each answered past its limit with 429,
Retry-After and a message saying why, and nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings
from django.urls import reverse

from agents.models import AgentSession, Turn
from agents.runner import get_runner
from aptix.ratelimits import TURNS, rate_limit
from aptix.tokens import api_token_create
from tests.helpers import ServerLikeAsyncClient, async_db

pytestmark = async_db

EXECUTE = "/api/v1/agent/execute"
ATTACKER = "203.0.113.9"
REDIS_URL = os.environ.get("APTIX_TEST_REDIS_URL", "")
ROOT = Path(__file__).resolve().parents[3]
NO_LIMITS = {"APTIX_RATE_TURNS": None, "APTIX_RATE_API": None, "APTIX_RATE_BAD_TOKENS": None}


async def call(url, body=None, token=None, address="127.0.0.1"):
    headers = {"X-Forwarded-For": address, **({"Authorization": f"Bearer {token}"} if token else {})}
    response = await ServerLikeAsyncClient().post(
        url, data=json.dumps(body or {}), content_type="application/json", headers=headers
    )
    return response, json.loads(response.content) if response["Content-Type"] == "application/json" else None


def retry_after(response) -> int:
    seconds = int(response["Retry-After"])
    assert 1 <= seconds <= 60
    return seconds


@pytest.fixture
async def token(alice):
    return (await sync_to_async(api_token_create)(user=alice))[1]


@override_settings(**{**NO_LIMITS, "APTIX_RATE_BAD_TOKENS": "3/m", "APTIX_TRUSTED_PROXIES": 1})
async def test_bad_bearer_tokens_lock_the_address_out_of_bearer_requests(token):
    for guess in ["apx_guess1", "apx_guess2", None]:  # a missing token counts as much as a wrong one
        response, body = await call(EXECUTE, {"message": "hi"}, guess, address=ATTACKER)
        assert response.status_code == 401 and "bearer token" in body["error"]["message"]
    response, body = await call(EXECUTE, {"message": "hi"}, "apx_guess4", address=ATTACKER)
    assert response.status_code == 429 and retry_after(response)
    assert body == {
        "error": {
            "message": f"Too many requests with an invalid API token from this address. "
            f"Try again in {response['Retry-After']} s.",
            "field": None,
        }
    }
    # from that address even a valid token waits (the guessing stops), on every bearer endpoint
    response, _ = await call(EXECUTE, {"message": "hi"}, token, address=ATTACKER)
    assert response.status_code == 429
    image = await ServerLikeAsyncClient().get(
        f"/media/images/{'a' * 32}/{'b' * 32}.png",
        headers={"Authorization": f"Bearer {token}", "X-Forwarded-For": ATTACKER},
    )
    assert image.status_code == 429 and retry_after(image)
    # ... and other addresses do not (an unknown conversation: the token passed)
    response, _ = await call(EXECUTE, {"message": "hi", "conversationId": "nope"}, token, address="198.51.100.7")
    assert response.status_code == 404
    assert await Turn.objects.acount() == 0


@override_settings(**{**NO_LIMITS, "APTIX_RATE_API": "3/m"})
async def test_api_requests_are_limited_per_token(alice, token):
    other_token = (await sync_to_async(api_token_create)(user=alice, name="second"))[1]
    for _ in range(3):
        response, _ = await call(reverse("api-turn-cancel", args=["no-such-turn"]), token=token)
        assert response.status_code == 404
    response, body = await call(reverse("api-turn-cancel", args=["no-such-turn"]), token=token)
    assert response.status_code == 429 and retry_after(response)
    assert body["error"]["message"].startswith("Too many API requests with this token: at most 3 per minute.")
    response, _ = await call(EXECUTE, {"message": "hi"}, token)
    assert response.status_code == 429 and await Turn.objects.acount() == 0
    response, _ = await call(reverse("api-turn-cancel", args=["no-such-turn"]), token=other_token)
    assert response.status_code == 404  # the user's other token has its own count


@override_settings(**{**NO_LIMITS, "APTIX_RATE_TURNS": "2/m"})
async def test_new_conversations_past_the_turn_rate_are_refused_and_nothing_is_written(llm, model, token, bob):
    for i in range(2):
        model.reply(f"Answer {i}.")
        response, body = await call(EXECUTE, {"message": f"Question {i}"}, token)
        assert response.status_code == 200 and body["status"] == "completed"
    response, body = await call(EXECUTE, {"message": "Question 3"}, token)
    assert response.status_code == 429 and retry_after(response)
    assert body["error"]["message"].startswith("Too many new messages or conversations: at most 2 per minute.")
    assert await AgentSession.objects.acount() == 2 and await Turn.objects.acount() == 2 and model.calls == 2
    # bob's turns are his own
    bob_token = (await sync_to_async(api_token_create)(user=bob))[1]
    model.reply("Hello Bob.")
    response, body = await call(EXECUTE, {"message": "Hi"}, bob_token)
    assert response.status_code == 200 and body["answer"] == "Hello Bob."


@override_settings(**{**NO_LIMITS, "APTIX_RATE_TURNS": "2/m"})
async def test_the_web_composer_and_new_session_form_share_the_users_turn_rate(
    llm, model, team_a, alice, bob, password, token
):
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username="alice", password=password)
    form = {"team": team_a.id, "mode": "general", "execution": "ask", "message": "Hello"}
    model.reply("Hi there.")
    response = await client.post(reverse("session-new"), form)  # one: a session starts with its first message
    assert response.status_code == 302
    session = await AgentSession.objects.aget()
    await get_runner().wait((await Turn.objects.aget()).id)
    model.reply("Hi again.")
    response = await client.post(reverse("turn-new", args=[session.id]), {"message": "Hello?"})  # two
    assert response.status_code == 200
    await get_runner().wait((await Turn.objects.aget(index=2)).id)

    response = await client.post(reverse("turn-new", args=[session.id]), {"message": "Again"})
    html = response.content.decode()
    assert response.status_code == 429 and retry_after(response)
    assert 'id="composer-error"' in html and "Too many new messages or conversations: at most 2 per minute." in html
    response = await client.post(reverse("session-new"), form)
    assert response.status_code == 429 and retry_after(response)
    assert "Too many new messages or conversations" in response.content.decode()
    response, _ = await call(EXECUTE, {"message": "From a program"}, token)  # the API counts the same turns
    assert response.status_code == 429
    assert await AgentSession.objects.acount() == 1 and await Turn.objects.acount() == 2 and model.calls == 2

    bobs = ServerLikeAsyncClient()
    await sync_to_async(bobs.login)(username="bob", password=password)
    model.reply("Hello Bob.")
    assert (await bobs.post(reverse("session-new"), form)).status_code == 302
    await get_runner().wait((await Turn.objects.aget(session__user=bob)).id)


@override_settings(**NO_LIMITS)
async def test_limits_that_are_off_count_nothing(llm, model, token):
    for i in range(5):
        response, _ = await call(EXECUTE, {"message": "hi"}, f"apx_guess{i}")
        assert response.status_code == 401
    model.reply("Still here.")
    response, body = await call(EXECUTE, {"message": "hi"}, token)
    assert response.status_code == 200 and body["answer"] == "Still here."


def test_with_redis_every_process_counts_in_one_place(rf):
    """With REDIS_URL the settings put the counts in Redis: two turns counted by another process and
    one here use up a rate of 3, so the next one here is refused. (A day's window: no minute boundary
    falls between the two processes.)"""
    if not REDIS_URL:
        pytest.skip("needs Redis (make test starts one; APTIX_TEST_REDIS_URL is unset)")
    key = f"user:{uuid.uuid4().hex}"
    script = (
        "import django; django.setup()\n"
        "from django.test import RequestFactory\n"
        "from aptix.ratelimits import TURNS, rate_limit\n"
        f"assert [rate_limit(TURNS, {key!r}, RequestFactory().post('/')) for _ in range(2)] == [None, None]\n"
    )
    env = {**os.environ, "REDIS_URL": REDIS_URL, "APTIX_RATE_TURNS": "3/d", "DJANGO_SETTINGS_MODULE": "aptix.settings"}
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, timeout=60)
    redis = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
    with override_settings(CACHES=redis, APTIX_RATE_TURNS="3/d"):
        assert rate_limit(TURNS, key, rf.post("/")) is None
        limited = rate_limit(TURNS, key, rf.post("/"))
    assert limited is not None and limited.message.startswith(
        "Too many new messages or conversations: at most 3 per day."
    )
