"""An error page (404, 403, 400, 500) gives its database connection back.

Under ASGI Django renders the response for a view's exception on a throwaway thread of the loop's
default executor (`sync_to_async(response_for_exception, thread_sensitive=False)`), not on the
request's thread, and the page's context processors query (the signed-in user, the inbox bell): that
thread opened a connection no request_finished ever closed. With the pool each such thread kept one
of APTIX_DB_POOL_MAX checked out for good; a CI worker, whose every test has a loop (and executor) of
its own, ran out of them ("couldn't get a connection after 30.00 sec")."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import markcoroutinefunction, sync_to_async
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse

from tests.helpers import ServerLikeAsyncClient, async_db


class RefusesEverything:
    """A middleware that raises (as CommonMiddleware does for a disallowed host): its exception is
    rendered by Django off the request's thread, where the middleware of aptix/error_pages.py is not."""

    sync_capable = False
    async_capable = True

    def __init__(self, get_response) -> None:
        self.get_response = get_response
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        raise Http404("Refused by a middleware.")


def _checked_out() -> int:
    stats = connection.pool.get_stats()
    return stats["pool_size"] - stats["pool_available"]


@async_db
async def test_error_pages_give_their_connections_back_to_the_pool(alice, password):
    await _pages_give_their_connections_back(alice, password)


@async_db
async def test_a_middlewares_error_page_gives_its_connection_back_too(alice, password, settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.RefusesEverything"]
    await _pages_give_their_connections_back(alice, password)


async def _pages_give_their_connections_back(alice, password) -> None:
    if getattr(connection, "pool", None) is None:
        pytest.skip("the database has no connection pool (APTIX_DB_POOL off, or SQLite)")
    client = ServerLikeAsyncClient()
    assert await sync_to_async(client.login)(username=alice.username, password=password)
    missing = reverse("session-detail", args=["no-such-session"])
    await client.get(missing)  # the test's own threads have taken theirs
    before = await sync_to_async(_checked_out)()

    responses = await asyncio.gather(*(client.get(missing) for _ in range(8)))

    assert [response.status_code for response in responses] == [404] * 8
    assert all(b"alice" in response.content for response in responses)  # the page did read the user
    assert await sync_to_async(_checked_out)() <= before
