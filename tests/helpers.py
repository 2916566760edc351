"""Test helpers shared across apps."""

from __future__ import annotations

import pytest
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.db import connections
from django.test import AsyncClient

# Async tests need real transactions (the ORM runs on another thread). The flush after such a test
# would also wipe the catalog and groups the migrations seeded; serialized_rollback restores them.
async_db = pytest.mark.django_db(transaction=True, serialized_rollback=True)


class ServerLikeAsyncClient(AsyncClient):
    """Django's AsyncClient, but each request runs in its own ThreadSensitiveContext as under a real
    ASGI server (Django's ASGIHandler does this; AsyncClientHandler does not). Without it the sync
    middleware of a request runs on the process-wide sync thread, which the turn runs that the
    request dispatched (detached tasks) also need: a deadlock no server would have."""

    async def request(self, **request):
        async with ThreadSensitiveContext():
            try:
                return await super().request(**request)
            finally:
                # The test client keeps Django from closing connections at the end of a request, and
                # this context's thread ends with it: close its connection, or PostgreSQL's test
                # database cannot be dropped ("being accessed by other users").
                await sync_to_async(connections.close_all)()
