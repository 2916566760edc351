"""Sessions for handshake-era clients that take elicitation (so a waiting turn can ask them mid-call):
only such a client's `initialize` opens one, every other request stays stateless, and a session id
is its owner's alone."""

from __future__ import annotations

from tests.helpers import async_db
from tests.helpers.interop import ACCEPT, asgi_http

pytestmark = async_db


def initialize(protocol: str, capabilities: dict) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol,
            "capabilities": capabilities,
            "clientInfo": {"name": "t", "version": "1"},
        },
    }


LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


async def test_only_a_handshake_era_client_that_takes_elicitation_gets_a_session(alice_token):
    async with asgi_http(alice_token) as http:
        plain = await http.post("/mcp/", json=initialize("2025-11-25", {}), headers=ACCEPT)
        asking = await http.post("/mcp/", json=initialize("2025-11-25", {"elicitation": {}}), headers=ACCEPT)
    assert plain.status_code == 200 and "mcp-session-id" not in plain.headers
    assert asking.status_code == 200 and asking.headers["mcp-session-id"]


async def test_a_session_is_its_owners_only(alice_token, carol_token):
    async with asgi_http(alice_token) as http:
        began = await http.post("/mcp/", json=initialize("2025-11-25", {"elicitation": {}}), headers=ACCEPT)
        session = {"Mcp-Session-Id": began.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post("/mcp/", json=initialized, headers={**ACCEPT, **session})).status_code == 202
        alices = await http.post("/mcp/", json=LIST, headers={**ACCEPT, **session})
        made_up = await http.post("/mcp/", json=LIST, headers={**ACCEPT, **session, "Mcp-Session-Id": "f" * 32})
    async with asgi_http(carol_token) as http:
        carols = await http.post("/mcp/", json=LIST, headers={**ACCEPT, **session})
    assert alices.status_code == 200 and "ask_general" in alices.text
    for refused in (made_up, carols):
        assert refused.status_code == 404
        assert refused.json() == {"error": {"message": "Session not found: initialize again."}}
