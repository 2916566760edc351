"""The opt-in real-model tier: `make test-real-model APTIX_REAL_MODEL_URL=http://127.0.0.1:8081/v1`
(for instance ../shared/local-llm/start.sh's llama.cpp server). Skipped unless that URL is given; not
run in CI. The tests assert only what a small model cannot break."""

from __future__ import annotations

import os
from pathlib import Path

import openai
import pytest

from agents.llm import LLMClient
from agents.llm.client import use_llm_client

HERE = Path(__file__).parent
URL = os.environ.get("APTIX_REAL_MODEL_URL", "")
MODEL = os.environ.get("APTIX_REAL_MODEL_NAME", "local")


def pytest_collection_modifyitems(config, items):
    if URL:
        return
    skip = pytest.mark.skip(reason="real-model tier: set APTIX_REAL_MODEL_URL (see tests/real_model/conftest.py)")
    for item in items:  # this hook sees every test of the run: only this folder's are skipped
        if item.path.is_relative_to(HERE):
            item.add_marker(skip)


@pytest.fixture
async def real_llm():
    client = LLMClient(
        openai.AsyncOpenAI(base_url=URL, api_key=os.environ.get("APTIX_REAL_MODEL_KEY", "local"), timeout=300),
        model=MODEL,
        label=MODEL,
        context_tokens=int(os.environ.get("APTIX_REAL_MODEL_CONTEXT", "8192")),
    )
    with use_llm_client(client):
        yield client
    await client.client.close()
