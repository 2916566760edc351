"""models.json's `"temperature"`: sent with each request of the model (a small local model answers the
same question the same way at 0; llama.cpp samples at 0.8 otherwise), left out when unset; a wrong
value is refused at start-up, naming the entry."""

from __future__ import annotations

import pytest

from agents.llm import build_llm_client
from agents.llm.catalog import ModelsConfigError, parse_models_config
from tests.helpers.scripted_model import openai_client

PROVIDERS = {"local": {"baseUrl": "http://127.0.0.1:8081/v1"}}
MESSAGES = [{"role": "user", "content": "Hi"}]


def parse(models: dict):
    return parse_models_config({"providers": PROVIDERS, "models": models}, environ={})


async def test_the_temperature_goes_with_each_request_and_only_when_set(model):
    config = parse({"steady": {"provider": "local", "temperature": 0}, "plain": {"provider": "local"}})
    assert (config.models["steady"].temperature, config.models["plain"].temperature) == (0.0, None)
    for key, expected in (("steady", 0.0), ("plain", None)):
        client = build_llm_client(config.models[key])
        client.client = openai_client(model, max_retries=0)  # the same client, pointed at the scripted server
        model.reply("Hello.")
        await client.stream_chat(messages=MESSAGES, tools=None)
        await client.client.close()
        assert model.last_request.get("temperature") == expected


@pytest.mark.parametrize("value", ["0", True, -0.1, 2.5, [0]])
def test_a_wrong_temperature_is_refused_naming_the_model(value):
    with pytest.raises(ModelsConfigError) as refused:
        parse({"m": {"provider": "local", "temperature": value}})
    assert 'model "m": "temperature" must be a number from 0 to 2' in str(refused.value)
