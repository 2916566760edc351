"""A 2026-07-28 streamable-HTTP server (sessionless: no session id for the client to lose) that restarts
with a new version: its tool list is listed again and the new tool is offered, because the host opens
its `subscriptions/listen` stream again once the old one ends while the connection is still up (and
lists what it may have missed meanwhile)."""

from __future__ import annotations

import pytest

from tests.helpers.mcp import HttpServer, by_name, ready_host
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # a real server process, restarted

RELISTED_WITHIN = 15  # seconds: the listen stream is reopened after a short backoff


@pytest.fixture
def modern_server():
    server = HttpServer()
    server.start("--modern")
    yield server
    server.close()


async def test_a_restarted_server_with_a_new_tool_is_listed_again(tmp_path, modern_server):
    registry = ToolRegistry("mcp")
    # No idle ping meanwhile: the new process would answer it anyway (it is up), so nothing but the
    # listen stream can tell the host that the server changed.
    entry = {"url": modern_server.url, "ping_interval": 0}
    with ready_host(tmp_path, {"web": entry}, registry=registry) as host:
        status = by_name(host.status())["web"]
        assert status.handshake.protocol_version >= "2026-07-28"
        assert "web__echo" in status.tools and "web__fresh" not in status.tools

        assert modern_server.process is not None
        modern_server.process.terminate()  # a graceful stop (a deployment): its streams end cleanly
        modern_server.process.wait()
        modern_server.start("--modern", "--extra-tool", "fresh")  # the new version, at the same address

        def relisted(statuses) -> bool:
            web = by_name(statuses)["web"]
            return web.state == "ready" and "web__fresh" in web.tools

        await host.wait_until(relisted, RELISTED_WITHIN)
        called = await registry.get("web__fresh").execute("{}", None)
        assert called.successful and called.result == "fresh is in this version"
