"""PostgreSQL through Django's psycopg pool (aptix/settings.py, APTIX_DB_POOL_*).
A burst of websocket handshakes and of request threads borrows from at most APTIX_DB_POOL_MAX
connections instead of opening one per thread ("too many clients" once they outnumber the server's
max_connections), and every handshake and request gets through."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from django.conf import settings
from django.db import close_old_connections, connection

from agents.models import AgentSession
from tests.helpers import async_db
from tests.helpers.streams import connect

HANDSHAKES = 60
REQUEST_THREADS = 40


class PeakConnections:
    """Polls the server's count of connections to the test database until stopped; keeps the peak."""

    def __init__(self) -> None:
        params = connection.get_connection_params()
        self.database = settings.DATABASES["default"]["NAME"]
        params.pop("pool", None)
        params.pop("cursor_factory", None)
        params.pop("context", None)
        self.dsn = psycopg.conninfo.make_conninfo(**{k: v for k, v in params.items() if isinstance(v, str | int)})
        self.peak = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as watcher:
            while not self.stop.is_set():
                row = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    [self.database],
                ).fetchone()
                self.peak = max(self.peak, int(row[0]) if row else 0)
                self.stop.wait(0.005)

    def __enter__(self) -> PeakConnections:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def _request(barrier: threading.Barrier) -> int:
    """What a request thread does: a query, then (request_finished) its connection handed back."""
    barrier.wait()
    try:
        return AgentSession.objects.count()
    finally:
        close_old_connections()
        connection.close()


@async_db
async def test_a_burst_of_handshakes_and_requests_stays_within_the_pool(make_session, alice, settings):
    if connection.vendor != "postgresql":
        pytest.skip("the pool is PostgreSQL's (bin/with-postgres)")
    max_size = (settings.DATABASES["default"].get("OPTIONS", {}).get("pool") or {}).get("max_size", 10)
    settings.APTIX_WS_MAX_PER_USER = settings.APTIX_WS_MAX_PER_SESSION = HANDSHAKES + 1
    session = await make_session()
    barrier = threading.Barrier(REQUEST_THREADS)
    with PeakConnections() as peak, ThreadPoolExecutor(REQUEST_THREADS) as threads:
        loop = asyncio.get_running_loop()
        requests = [loop.run_in_executor(threads, _request, barrier) for _ in range(REQUEST_THREADS)]
        sockets = await asyncio.gather(*(connect(session.id, alice, timeout=30) for _ in range(HANDSHAKES)))
        counts = await asyncio.gather(*requests)
    assert all(connected for _, connected in sockets)  # every handshake got through
    assert counts == [1] * REQUEST_THREADS  # and every request
    # the test's own connections (its thread, the event writer) come from the same pool
    assert 0 < peak.peak <= max_size, f"{peak.peak} server connections for a pool of {max_size}"
    for communicator, _ in sockets:
        await communicator.disconnect()
