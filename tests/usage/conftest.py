"""Fixtures of the usage tests: the turn tests' scripted model and runs (tests/helpers/reasoner.py),
a stand-in MCP tool, and a models configuration with a price."""

from __future__ import annotations

import json

import pytest

from agents.llm import catalog
from tests.helpers.reasoner import llm, make_session, model, run_turn  # noqa: F401 - fixtures of the turn tests
from tests.helpers.worker_process import redis_layer, worker  # noqa: F401 - fixtures of the race test
from tools.base import InvokeResult, function_schema
from tools.registry import mcp_registry


@pytest.fixture
def priced_models(tmp_path, settings):
    """The default model ("priced", $2.50 / $10 per million tokens) and one without a price, from a
    models.json as a deployment has it."""
    path = tmp_path / "models.json"
    path.write_text(
        json.dumps(
            {
                "providers": {"p": {"baseUrl": "http://model.invalid/v1"}},
                "models": {
                    "priced": {"provider": "p", "price": {"input": 2.5, "output": 10}},
                    "free": {"provider": "p"},
                },
                "default": "priced",
            }
        )
    )
    settings.APTIX_MODELS_CONFIG = str(path)
    catalog.reset_models_config()
    yield catalog.models_config()
    catalog.reset_models_config()


class LookupTool:
    TOOL_USAGE_METADATA = "Look something up."
    is_tool_fully_executed_on_server = True
    TOOL_NAME = "kb__lookup"
    read_only = True

    @staticmethod
    def get_schema():
        return function_schema("kb__lookup", "Look up.", {"q": {"type": "string"}}, required=["q"])

    async def execute(self, arguments_json, context):
        return InvokeResult.create("found: " + arguments_json)


@pytest.fixture
def lookup_tool():
    mcp_registry.register(LookupTool())
    yield
    mcp_registry.unregister("kb__lookup")
