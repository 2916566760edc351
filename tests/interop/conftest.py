"""Fixtures of the MCP server's tests: the scripted model (tests/helpers/reasoner.py) and API tokens
of alice (team A) and carol (team B)."""

from __future__ import annotations

import asyncio
import contextlib

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


@pytest.fixture(autouse=True)
async def _mcp_managers_stopped():
    """After each test, the MCP server's session managers of the test's event loop are stopped, as a
    serving process's are when its loop ends: the sessions' handlers run their clean-up and give their
    database connections back. A test's loop closed with them still running left their threads'
    pooled connections checked out for good, and a later test of the process timed out on the pool."""
    yield
    from interop.mcp_server import mount

    running = mount._running.pop(asyncio.get_running_loop(), None)
    if running is not None:
        running.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running.task
