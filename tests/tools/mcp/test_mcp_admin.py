"""Admin → MCP servers: the status of this process's servers, for staff only."""

from __future__ import annotations

import json

import pytest

from tools.mcp import host as host_module
from tools.mcp.host import McpHost

URL = "/admin/mcp/"


@pytest.fixture
def running_host(tmp_path, monkeypatch):
    """A host whose servers settle without spawning anything: one disabled, one broken entry."""
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "archive": {
                        "command": "archive-server",
                        "env": {"KEY": "${APTIX_UNSET_VARIABLE}"},
                        "disabled": True,
                    },
                    "broken": {"comand": "typo-server"},
                }
            }
        )
    )
    host = McpHost(config)
    host.start()
    host.wait_until_sync(lambda statuses: len(statuses) == 2 and all(s.settled for s in statuses), 10)
    monkeypatch.setattr(host_module, "_host", host)
    yield host
    host.stop()


def test_staff_see_each_servers_state_and_error(client, running_host, curator, password):
    client.login(username="curtis", password=password)
    html = client.get(URL).content.decode()
    assert "<strong>archive</strong></td>\n          <td>stdio</td>\n          <td>disabled</td>" in html
    assert "<strong>broken</strong>" in html and "unknown key &quot;comand&quot;" in html
    assert 'href="/admin/mcp/"' in client.get("/admin/").content.decode()  # linked from the index


def test_non_staff_and_anonymous_are_sent_to_the_admin_login(client, running_host, alice, password):
    assert client.get(URL)["Location"].startswith("/admin/login/")
    client.login(username="alice", password=password)
    response = client.get(URL)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
