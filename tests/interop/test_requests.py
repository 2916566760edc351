"""A call served as a request gives its thread's database connection back when it ends — also when
it ends cancelled (interop/requests.py): the clean-up ran inside a scope still being cancelled, the
close never happened, and the pool lost a connection for good."""

from __future__ import annotations

import asyncio

import anyio
import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from interop.requests import served_as_a_request
from modes.models import AgentMode
from tests.helpers import async_db

pytestmark = async_db


def _query_and_keep(held: list) -> None:
    AgentMode.objects.count()
    held.append(connections["default"])  # this thread's connection wrapper, to look at once the call has ended


async def _a_call(held: list, started: asyncio.Event) -> None:
    async with served_as_a_request():
        await sync_to_async(_query_and_keep)(held)
        started.set()
        await asyncio.Event().wait()  # until cancelled, as a call whose client went away


async def test_an_anyio_cancelled_call_gives_its_connection_back():
    held: list = []
    started = asyncio.Event()
    async with anyio.create_task_group() as calls:  # as the MCP SDK runs its handlers
        calls.start_soon(_a_call, held, started)
        await started.wait()
        assert held[0].connection is not None
        calls.cancel_scope.cancel()
    assert held[0].connection is None


async def test_an_asyncio_cancelled_call_gives_its_connection_back():
    held: list = []
    started = asyncio.Event()
    task = asyncio.ensure_future(_a_call(held, started))  # as Daphne runs a request, cancelled on disconnect
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert held[0].connection is None
