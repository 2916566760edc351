"""Admin → MCP servers: the status of this process's servers, for staff only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.mcp import host as host_module
from tools.mcp.host import McpHost

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

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


@pytest.fixture
def start_host(tmp_path, monkeypatch):
    """Start this process's host (the one the admin page and the Tools panel read) on `servers`,
    written as mcp.json (a str is written as is)."""
    hosts = []

    def start(servers) -> McpHost:
        config = tmp_path / "mcp.json"
        config.write_text(servers if isinstance(servers, str) else json.dumps({"mcpServers": servers}))
        host = McpHost(config)
        host.start()
        host.wait_until_sync(lambda statuses: all(s.settled for s in statuses), 60)
        monkeypatch.setattr(host_module, "_host", host)
        hosts.append(host)
        return host

    yield start
    for host in hosts:
        host.stop()


def session_page(client, user, password) -> str:
    from django.urls import reverse

    from agents.sessions import session_create

    session = session_create(team=user.memberships.first().team, user=user, execution="agent")
    client.login(username=user.username, password=password)
    return client.get(reverse("session-detail", args=[session.id])).content.decode()


def test_a_config_file_that_is_not_json_is_shown_with_its_line_and_column(client, start_host, curator, alice, password):
    host = start_host('{"mcpServers": {\n  "time": {"command": "mcp-server-time"}\n  "sql": {}}}')
    error = f"MCP config file {host.config_path} is not valid JSON: line 3, column 3: Expecting &#x27;,&#x27; delimiter"

    client.login(username="curtis", password=password)
    admin_page = client.get(URL).content.decode()
    assert error in admin_page
    assert "the config file cannot be used (see above)" in admin_page
    client.logout()
    panel = session_page(client, alice, password)
    assert error in panel
    assert "No MCP servers are configured" not in panel


def test_dropped_and_renamed_tools_are_shown_on_the_admin_page_and_in_the_tools_panel(
    client, start_host, curator, alice, password
):
    odd_server = str(Path(__file__).with_name("odd_server.py"))
    start_host({"odd": {"command": "python", "args": [odd_server]}})
    invalid = "<code>no_type</code>: invalid definition: inputSchema.type: Field required"
    collision = (
        "<code>dotted_name</code>: its name collides with &quot;dotted.name&quot; (both become odd__dotted_name)"
    )

    client.login(username="curtis", password=password)
    admin_page = client.get(URL).content.decode()
    assert "ready with 3 tools, 3 dropped" in admin_page
    assert "<code>odd__dotted_name</code> (the server's <code>dotted.name</code>)" in admin_page
    assert invalid in admin_page and collision in admin_page
    client.logout()
    panel = session_page(client, alice, password)
    assert "ready with 3 tools, 3 dropped" in panel
    assert "<code>dotted_name</code> <span class=\"why\">(the server's <code>dotted.name</code>)</span>" in panel
    assert "<code>no_type</code> <span class=\"why\">not offered: invalid definition: inputSchema.type" in panel


def test_the_tools_panel_says_why_a_task_only_tool_and_an_invalid_schema_are_not_offered(
    client, start_host, alice, password
):
    server = str(Path(__file__).with_name("unofferable_server.py"))
    start_host({"u": {"command": "python", "args": [server]}})

    panel = session_page(client, alice, password)

    assert "ready with 2 tools, 2 dropped" in panel
    assert (
        '<code>task_only</code> <span class="why">not offered: it runs only as an MCP task '
        "(execution.taskSupport &quot;required&quot;), but the server does not declare task support for "
        "tools/call</span>"
    ) in panel
    assert (
        '<code>typo_schema</code> <span class="why">not offered: invalid definition: inputSchema is not valid '
        "JSON Schema: properties.text.type: &#x27;strin&#x27; is not valid"
    ) in panel


FIXTURE = str(Path(__file__).with_name("mcp_fixture_server.py"))


def test_staff_restart_one_server_with_a_csrf_protected_post(client, start_host, curator, alice, password):
    from django.test import Client

    host = start_host({"fixture": {"command": "python", "args": [FIXTURE]}})
    (before,) = host.status()
    restart = {"action": "restart", "server": "fixture"}
    client.login(username="alice", password=password)  # not staff
    assert client.post(URL, restart)["Location"].startswith("/admin/login/")
    client = Client(enforce_csrf_checks=True)
    client.login(username="curtis", password=password)
    page = client.get(URL).content.decode()
    assert (
        '<input type="hidden" name="server" value="fixture"><button type="submit" class="button">Restart</button>'
        in page
    )
    assert client.post(URL, restart).status_code == 403  # no CSRF token
    assert host.status() == [before]

    response = client.post(URL, {**restart, "csrfmiddlewaretoken": client.cookies["csrftoken"].value}, follow=True)

    assert 'Restarting MCP server &quot;fixture&quot;.' in response.content.decode()
    host.wait_until_sync(lambda s: s[0].state == "ready" and s[0].pid != before.pid, 60)


def test_staff_restart_every_server_with_restart_all(client, start_host, curator, password):
    host = start_host({"fixture": {"command": "python", "args": [FIXTURE]}, "off": {"command": "x", "disabled": True}})
    before = host.status()[0]
    client.login(username="curtis", password=password)
    form = client.get(URL).content.decode().split('<form method="post" id="mcp-restart-all">')[1].split("</form>")[0]
    assert 'name="action" value="restart-all">' in form and "Restart all</button>" in form

    page = client.post(URL, {"action": "restart-all"}, follow=True).content.decode()

    assert "Restarting MCP servers fixture." in page
    host.wait_until_sync(lambda s: s[0].state == "ready" and s[0].pid != before.pid, 60)


def test_the_reload_button_applies_the_edited_config(client, start_host, curator, password):
    host = start_host({"off": {"command": "python", "disabled": True}})
    host.config_path.write_text(json.dumps({"mcpServers": {"other": {"command": "python", "disabled": True}}}))
    client.login(username="curtis", password=password)

    page = client.post(URL, {"action": "reload"}, follow=True).content.decode()

    assert "MCP servers updated other, off (0 unchanged)." in page
    assert "<strong>other</strong>" in page and "<strong>off</strong>" not in page


def test_a_servers_log_messages_and_stderr_are_on_the_admin_page(client, start_host, curator, password):
    import asyncio

    from tools.registry import mcp_registry

    host = start_host({"fixture": {"command": "python", "args": [FIXTURE]}})
    assert asyncio.run(mcp_registry.get("fixture__log").execute('{"level": "error", "text": "no <db>"}', None)).result
    host.wait_until_sync(lambda s: bool(host.logs("fixture").messages()), 10)
    client.login(username="curtis", password=password)

    page = client.get(URL).content.decode()

    assert "Log of fixture: 1 message, " in page
    assert " ERROR fixture.worker: no &lt;db&gt;\n" in page
    assert " stderr says: no &lt;db&gt;\n" in page
