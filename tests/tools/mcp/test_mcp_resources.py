"""A server's resources: listed with its templates once its session is up (status, `mcp_status
--json`, the session's Tools panel), read by URI on the server that lists it (text, and an image
stored for the session as a tool result's would be), templates matched; a URI no configured server
offers is refused rather than fetched."""

from __future__ import annotations

import asyncio

import pytest

from agents.sessions import session_create
from tests.helpers.mcp import by_name, fixture_entry, guide_entry, ready_host
from tools.mcp import host as host_module
from tools.mcp.resources import ResourceInfo
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers)


@pytest.fixture(scope="module")
def guide_host(tmp_path_factory):
    servers = {"guide": guide_entry(), "plain": fixture_entry()}
    with ready_host(tmp_path_factory.mktemp("mcp"), servers, registry=ToolRegistry("mcp")) as host:
        yield host


def test_resources_and_templates_are_listed_in_the_status(guide_host):
    statuses = by_name(guide_host.status())
    listed = {r.uri: r for r in statuses["guide"].resources}
    assert listed["guide://readme"] == ResourceInfo(
        "guide://readme", "readme", "How to use the guide.", "text/markdown", False
    )
    assert listed["guide://people/{name}"].template
    assert statuses["plain"].resources == ()  # a server without resources
    assert {"uri": "guide://pixel.png", "name": "pixel", "mime_type": "image/png"} in statuses["guide"].as_dict()[
        "resources"
    ]


def test_a_resource_is_read_on_the_server_that_lists_it(guide_host):
    result = asyncio.run(guide_host.read_resource("guide://readme", user_id=None))
    assert result.successful and "Greet people by name." in result.content_for_model()
    person = asyncio.run(guide_host.read_resource("guide://people/ada", user_id=None))
    assert "ada likes being greeted." in person.content_for_model()
    assert guide_host.server_of("guide://people/ada") == "guide"


def test_an_image_resource_comes_back_as_an_image(guide_host):
    result = asyncio.run(guide_host.read_resource("guide://pixel.png", user_id=None))
    assert result.successful
    assert [a.kind for a in getattr(result, "attachments", ())] == ["image"]


@pytest.mark.parametrize("uri", ["https://example.com/", "file:///etc/passwd", "guide://other"])
def test_a_uri_no_configured_server_offers_is_refused(guide_host, uri):
    result = asyncio.run(guide_host.read_resource(uri, user_id=None))
    assert not result.successful and result.error_message == f"No MCP server here offers the resource {uri}."


def test_only_allowed_servers_are_asked(guide_host):
    result = asyncio.run(guide_host.read_resource("guide://readme", allowed=["plain"], user_id=None))
    assert not result.successful


def test_the_tools_panel_lists_each_servers_resources(guide_host, client, alice, team_a, password, monkeypatch):
    monkeypatch.setattr(host_module, "_host", guide_host)
    session = session_create(team=team_a, user=alice)
    client.login(username="alice", password=password)
    html = client.get(f"/sessions/{session.id}/").content.decode()
    assert "4 resources</summary>" in html
    assert "<code class=\"why\">guide://people/{name}</code> <span class=\"why\">(template)</span>" in html
