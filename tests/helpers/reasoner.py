"""Fixtures of the tests that run turns: a scripted model over the real SDK, sessions, and running a
turn to its end with a Reasoner. Registered by tests/agents/conftest.py and tests/tools/mcp/conftest.py."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.llm import LLMClient, use_llm_client
from agents.models import Turn
from agents.run.reasoner import Reasoner
from agents.sessions import session_create
from agents.turns import turn_start
from tests.helpers.scripted_model import ScriptedModel, openai_client


@pytest.fixture
def model():
    return ScriptedModel()


@pytest.fixture
async def llm(model):
    client = LLMClient(openai_client(model, max_retries=2, timeout=5), model="scripted-model", label="scripted")
    with use_llm_client(client):
        yield client
    await client.client.close()


@pytest.fixture
def make_session(team_a, alice):
    async def make(**kwargs):
        kwargs.setdefault("team", team_a)
        kwargs.setdefault("user", alice)
        return await sync_to_async(session_create)(**kwargs)

    return make


@pytest.fixture
def run_turn(llm):
    """Start a turn in `session` and run it to its end with a Reasoner on the scripted model."""

    async def run(session, text="Hello", execution=None, reasoner=None, choice=None, **kwargs) -> Turn:
        turn = await sync_to_async(turn_start)(session=session, text=text, execution=execution, choice=choice)
        await (reasoner or Reasoner(llm=llm)).run(turn.id, **kwargs)
        return await Turn.objects.select_related("session").aget(pk=turn.id)

    return run
