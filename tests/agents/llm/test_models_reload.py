"""models.json under a running process: a change that no longer validates is reported on /readyz and
in the admin while the last good configuration keeps serving turns; a process that never had a good
one fails its turns saying so (and is not ready) instead of answering 500; a fixed file is used again."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.llm import catalog
from agents.llm.client import reset_llm_clients
from agents.models import AgentSession, Turn
from agents.run.reasoner import ERROR_MODELS, Reasoner
from agents.runner import get_runner
from agents.sessions import session_create
from agents.turns import turn_start
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.scripted_model import ScriptedModel, loopback_server


def models_json(url: str, **extra) -> str:
    model = {"provider": "local", "model": "scripted-model", "label": "Local", **extra}
    return json.dumps({"providers": {"local": {"baseUrl": f"{url}/v1"}}, "models": {"local": model}})


@pytest.fixture
async def served(tmp_path, settings, monkeypatch):
    """A models file naming one scripted model server, looked at again on every use."""
    model = ScriptedModel()
    async with loopback_server(model) as url:
        path = tmp_path / "models.json"
        path.write_text(models_json(url))
        settings.APTIX_MODELS_CONFIG = str(path)
        settings.APTIX_LLM_MAX_RETRIES = 0
        monkeypatch.setattr(catalog, "RELOAD_POLL", 0.0)
        reset_llm_clients()
        yield model, path, url
    reset_llm_clients()


async def readyz() -> tuple[int, dict]:
    response = await ServerLikeAsyncClient().get("/readyz")
    return response.status_code, json.loads(response.content)


@async_db
async def test_a_bad_change_is_reported_while_the_last_good_configuration_serves(served, team_a, alice, admin_user):
    model, path, url = served
    session = await sync_to_async(session_create)(team=team_a, user=alice)
    model.reply("Before.")
    turn = await Reasoner().run((await sync_to_async(turn_start)(session=session, text="Hi")).id)
    assert (turn.status, turn.model_label) == ("completed", "Local")
    assert "config" not in (await readyz())[1]["checks"]

    path.write_text(models_json(url, colour="red"))  # a key models.json does not have
    status, body = await readyz()
    assert status == 200  # still serving: the last good configuration
    assert body["checks"]["config"].startswith('failed: models.json: model "local": unknown key "colour"')
    assert str(path.parent) not in body["checks"]["config"]
    model.reply("After.")
    turn = await Reasoner().run((await sync_to_async(turn_start)(session=session, text="Again")).id)
    assert (turn.status, turn.answer, turn.model_label) == ("completed", "After.", "Local")

    admin = ServerLikeAsyncClient()
    await admin.aforce_login(admin_user)
    page = (await admin.get(reverse("admin:index"))).content.decode()
    assert 'id="config-problems"' in page and "unknown key &quot;colour&quot;" in page

    path.write_text(models_json(url, label="Fixed"))
    assert "config" not in (await readyz())[1]["checks"]
    model.reply("Fixed.")
    turn = await Reasoner().run((await sync_to_async(turn_start)(session=session, text="Once more")).id)
    assert (turn.status, turn.model_label) == ("completed", "Fixed")


@async_db
async def test_without_a_good_configuration_a_turn_fails_saying_so_never_500(served, team_a, alice, password):
    """As under plain `daphne`, which runs no system checks: the file is bad from the first use."""
    model, path, url = served
    path.write_text(models_json(url, colour="red"))
    reset_llm_clients()
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username="alice", password=password)
    response = await client.post(
        reverse("session-new"), {"team": team_a.id, "mode": "general", "execution": "ask", "message": "Hello"}
    )
    assert response.status_code == 302
    session = await AgentSession.objects.aget()
    turn = await get_runner().wait((await session.turns.aget()).id)
    assert (turn.status, turn.error) == ("failed", ERROR_MODELS) and model.calls == 0
    page = await client.get(response["Location"])
    assert page.status_code == 200
    status, body = await readyz()
    assert status == 503 and "unknown key" in body["checks"]["config"]
    assert body["checks"]["config"].endswith("(no good configuration to serve)")
    assert await Turn.objects.filter(status="failed").acount() == 1
