"""A worker sets up before its first run what that run would otherwise set up while the others wait
(about a second of a cold worker's event loop in the scale-out bench): the default model's client and
its tokenizer."""

from __future__ import annotations

from agents.llm import client as llm_client
from agents.llm.catalog import model_for
from agents.run import context
from agents.run.worker import warm_up


def test_warm_up_builds_the_default_models_client_and_tokenizer():
    llm_client.reset_llm_clients()
    context._encoding_for.cache_clear()
    warm_up()
    assert model_for().key in llm_client._clients.built
    assert context._encoding_for.cache_info().currsize == 1
