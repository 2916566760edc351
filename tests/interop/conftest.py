"""Fixtures of the MCP server's tests: the scripted model (tests/helpers/reasoner.py) and API tokens
of alice (team A) and carol (team B)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from aptix.tokens import api_token_create
from tests.helpers.oidc import provider_settings, signing_in  # noqa: F401 - fixtures of the OAuth tests
from tests.helpers.reasoner import llm, model  # noqa: F401 - fixtures of the turn tests


@pytest.fixture
async def alice_token(alice):
    _, secret = await sync_to_async(api_token_create)(user=alice, name="mcp")
    return secret


@pytest.fixture
async def carol_token(carol):
    _, secret = await sync_to_async(api_token_create)(user=carol, name="mcp")
    return secret
