"""Several models (agents/llm/catalog.py): a models file in the style of mcp.json with secrets only from
the environment, a model per mode, a model per session, the turn recording which model ran, and a
model without tool support; with no file the OPENAI_* variables or the offline model serve."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.llm.catalog import ModelsConfigError, environment_config, parse_models_config
from agents.llm.client import reset_llm_clients
from agents.models import AgentSession, Turn
from agents.run.reasoner import Reasoner
from agents.sessions import session_create
from agents.turns import turn_start
from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.events import events_of
from tests.helpers.scripted_model import ScriptedModel, loopback_server

ENV = {"STRONG_KEY": "sk-strong", "SMALL_KEY": "sk-small"}


def config(**changes) -> dict:
    raw = {
        "providers": {
            "strong": {"baseUrl": "http://strong.invalid/v1", "apiKey": "${STRONG_KEY}"},
            "small": {
                "baseUrl": "http://small.invalid/v1",
                "apiKey": "${SMALL_KEY}",
                "headers": {"X-Org": "${SMALL_KEY}"},
            },
        },
        "models": {
            "small": {"provider": "small", "model": "small-1", "label": "Small", "contextTokens": 8192},
            "strong": {"provider": "strong", "model": "strong-1", "label": "Strong", "vision": True},
        },
        "default": "small",
    }
    raw.update(changes)
    return raw


def test_a_models_file_is_read_with_secrets_from_the_environment():
    parsed = parse_models_config(config(), environ=ENV)
    assert parsed.default == "small" and list(parsed.models) == ["small", "strong"]
    small = parsed.models["small"]
    assert (small.model, small.label, small.context_tokens, small.tools) == ("small-1", "Small", 8192, True)
    assert small.provider.api_key == "sk-small" and dict(small.provider.headers) == {"X-Org": "sk-small"}
    assert parsed.models["strong"].vision is True


@pytest.mark.parametrize(
    "raw, message",
    [
        (config(providers={"p": {"apiKey": "sk-literal"}}, models={"m": {"provider": "p"}}), '"apiKey" must come from'),
        (config(default="huge"), '"default" names "huge"'),
        (config(models={"m": {"provider": "nowhere"}}), '"provider" must be one of'),
        (config(models={"m": {"provider": "small", "contextTokens": 12}}), "at least 1000"),
        (config(models={"m": {"provider": "small", "top_p": 1}}), 'unknown key "top_p"'),
        (config(models={}), 'needs a "models" object'),
        (config(models={"m": {"provider": "small", "price": {"input": 1}}}), '"price" must be'),
        (config(models={"m": {"provider": "small", "price": {"input": -1, "output": 2}}}), '"price" must be'),
        (config(models={"m": {"provider": "small", "price": {"input": "1", "output": 2}}}), '"price" must be'),
        (config(models={"m": {"provider": "small", "price": {"input": 1, "output": 2, "cached": 1}}}), '"price"'),
    ],
)
def test_a_bad_models_file_names_the_problem(raw, message):
    with pytest.raises(ModelsConfigError, match=message):
        parse_models_config(raw, environ=ENV)


def test_a_price_per_million_tokens_gives_a_turns_cost_and_no_price_leaves_it_unknown():
    raw = config()
    raw["models"]["strong"]["price"] = {"input": 2.5, "output": 10}
    parsed = parse_models_config(raw, environ=ENV)
    price = parsed.models["strong"].price
    assert price is not None and str(price.cost(1_000_000, 100_000)) == "3.5"
    assert str(price.cost(1234, 56)) == "0.003645"  # exact: no float error
    assert parsed.models["small"].price is None


def test_an_unset_variable_is_named():
    with pytest.raises(ModelsConfigError, match=r"STRONG_KEY.*not set"):
        parse_models_config(config(), environ={"SMALL_KEY": "x"})


def test_without_a_file_the_variables_or_the_offline_model_serve(settings):
    settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "", ""
    assert environment_config().default == "offline"
    settings.OPENAI_API_KEY, settings.APTIX_LLM_MODEL = "sk-x", "gpt-4.1-mini"
    env = environment_config()
    assert env.default == "gpt-4.1-mini" and env.models["gpt-4.1-mini"].provider.api_key == "sk-x"


@pytest.fixture
async def two_servers(tmp_path, settings, monkeypatch):
    """Two scripted model servers as two providers in a models file: "small" (the default, no tool
    support) and "strong"."""
    small, strong = ScriptedModel("small-1"), ScriptedModel("strong-1")
    async with loopback_server(small) as small_url, loopback_server(strong) as strong_url:
        raw = config()
        raw["providers"]["small"]["baseUrl"] = f"{small_url}/v1"
        raw["providers"]["strong"]["baseUrl"] = f"{strong_url}/v1"
        raw["models"]["small"]["tools"] = False
        path = tmp_path / "models.json"
        path.write_text(json.dumps(raw))
        for name, value in ENV.items():
            monkeypatch.setenv(name, value)
        settings.APTIX_MODELS_CONFIG = str(path)
        settings.APTIX_LLM_MAX_RETRIES = 0
        reset_llm_clients()
        yield small, strong
    reset_llm_clients()


@async_db
async def test_a_mode_can_use_another_model_and_a_session_can_pick_one(two_servers, team_a, alice):
    small, strong = two_servers
    await AgentMode.objects.filter(key="data-analysis").aupdate(model="strong")
    analysis = await sync_to_async(session_create)(team=team_a, user=alice, mode="data-analysis")
    general = await sync_to_async(session_create)(team=team_a, user=alice, mode="general")

    strong.reply("From the strong model.")
    turn = await sync_to_async(turn_start)(session=analysis, text="Revenue?")
    turn = await Reasoner().run(turn.id)
    assert turn.status == "completed" and turn.model_label == "Strong" and strong.calls == 1

    small.reply("From the small model.")
    turn = await sync_to_async(turn_start)(session=general, text="Hi")
    turn = await Reasoner().run(turn.id)
    assert turn.model_label == "Small" and small.calls == 1
    assert "tools" not in small.last_request  # the small model takes no tools
    [started] = await events_of(turn, "turn.started")
    assert started["tools_unsupported"] is True and (await Turn.objects.aget(pk=turn.id)).trace["tools"] == []

    client = ServerLikeAsyncClient()
    await client.aforce_login(alice)
    page = (await client.get(reverse("session-detail", args=[general.id]))).content.decode()
    assert '<option value="small" selected>Small</option>' in page and '<option value="strong">Strong</option>' in page
    response = await client.post(reverse("session-model", args=[general.id]), {"model": "strong"})
    assert (
        response.status_code == 200 and '<option value="strong" selected>Strong</option>' in response.content.decode()
    )
    assert (await AgentSession.objects.aget(pk=general.id)).model == "strong"
    strong.reply("Now the strong one.")
    turn = await sync_to_async(turn_start)(session=await AgentSession.objects.aget(pk=general.id), text="Again")
    turn = await Reasoner().run(turn.id)
    assert turn.model_label == "Strong" and strong.calls == 2

    response = await client.post(reverse("session-model", args=[general.id]), {"model": "gpt-9"})
    assert response.status_code == 400 and b"Unknown model 'gpt-9'" in response.content
