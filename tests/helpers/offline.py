"""The built-in offline model: a fixture that makes it the turns' model, and Chat Completions requests
as the reasoner sends them to it."""

from __future__ import annotations

import pytest

from agents.llm import build_llm_client
from agents.llm.offline import OFFLINE_MODEL_NAME

INTERNAL = ["agent_change_mode", "agent_list_modes", "image_gen"]
SQL = ["sql__list_tables", "sql__query"]


def schema(name: str) -> dict:
    props = {"sql": {"type": "string"}} if name.endswith("__query") else {}
    return {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": {"type": "object", "properties": props}},
    }


def body(*messages: dict, tools=INTERNAL, mode: str = "general", execution: str = "ask") -> dict:
    system = {"role": "system", "content": f"You are Aptix.\n\nCurrent mode: {mode}\nExecution: {execution}"}
    return {"model": OFFLINE_MODEL_NAME, "messages": [system, *messages], "tools": [schema(t) for t in tools]}


def user(text: str) -> dict:
    return {"role": "user", "content": text}


@pytest.fixture
def offline(monkeypatch):
    """The built-in offline model as the turns' model: no hosted model is configured."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    client = build_llm_client()
    assert client.is_offline
    return client
