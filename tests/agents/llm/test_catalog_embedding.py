"""models.json's `"embedding": true`: the one embedding model knowledge search embeds passages with,
never offered as a chat model; a wrong use of the key is refused at start-up, naming the entry."""

from __future__ import annotations

import pytest

from agents.llm.catalog import ModelsConfigError, parse_models_config

PROVIDERS = {"local": {"baseUrl": "http://127.0.0.1:8081/v1"}}


def parse(models: dict, **extra):
    return parse_models_config({"providers": PROVIDERS, "models": models, **extra}, environ={})


def test_the_embedding_model_is_kept_apart_from_the_chat_models():
    config = parse(
        {
            "embedder": {"provider": "local", "model": "nomic-embed", "embedding": True},
            "chat": {"provider": "local", "model": "qwen"},
        }
    )
    assert list(config.models) == ["chat"] and config.default == "chat"
    assert [spec.key for spec in config.choices] == ["chat"]
    assert config.embedding is not None and (config.embedding.key, config.embedding.model) == (
        "embedder",
        "nomic-embed",
    )
    assert parse({"chat": {"provider": "local"}}).embedding is None


@pytest.mark.parametrize(
    ("models", "extra", "message"),
    [
        (
            {"e": {"provider": "local", "embedding": "yes"}, "c": {"provider": "local"}},
            {},
            'model "e": "embedding" must be true or false, not "yes"',
        ),
        (
            {
                "e": {"provider": "local", "embedding": True},
                "f": {"provider": "local", "embedding": True},
                "c": {"provider": "local"},
            },
            {},
            'only one model may be "embedding": true; "e", "f" are',
        ),
        (
            {"e": {"provider": "local", "embedding": True}},
            {},
            'needs at least one chat model besides the "embedding": true one',
        ),
        (
            {"e": {"provider": "local", "embedding": True}, "c": {"provider": "local"}},
            {"default": "e"},
            '"default" names "e", which is an embedding model',
        ),
    ],
)
def test_a_wrong_embedding_entry_is_refused_naming_it(models, extra, message):
    with pytest.raises(ModelsConfigError) as refused:
        parse(models, **extra)
    assert message in str(refused.value)
