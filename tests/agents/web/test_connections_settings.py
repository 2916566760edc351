"""Settings → Connections: a form per MCP server that acts as each user, one write-only field per
named secret (saved ones say so, their values never come back), saved encrypted, removed on request,
and nothing for a server the file does not run per user."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from connections.store import secrets_get
from tests.helpers.mcp import write_config

SECRET = "ghp_never-shown-again-123"
pytestmark = pytest.mark.django_db


@pytest.fixture
def per_user_config(tmp_path, settings):
    settings.APTIX_SECRETS_KEY = [Fernet.generate_key().decode()]
    settings.APTIX_MCP_CONFIG = str(tmp_path / "mcp.json")
    entry = {"url": "https://gh.example.com/mcp", "headers": {"Authorization": "Bearer ${user:GITHUB_TOKEN}"}}
    write_config(tmp_path / "mcp.json", {"gh": entry, "time": {"command": "python"}})


def test_the_page_asks_for_each_named_secret_and_never_shows_a_saved_one(per_user_config, client, alice):
    client.force_login(alice)
    page = client.get("/settings/").content.decode()
    assert 'id="connection-gh"' in page and 'name="GITHUB_TOKEN"' in page and "not connected" in page
    assert "connection-time" not in page  # a shared server has nothing to connect
    answer = client.post("/settings/connections/gh/", {"GITHUB_TOKEN": SECRET})
    assert answer.status_code == 302 and answer["Location"].endswith("/settings/#connection-gh")
    assert secrets_get(user_id=alice.pk, server="gh") == {"GITHUB_TOKEN": SECRET}
    page = client.get("/settings/").content.decode()
    assert "(saved)" in page and SECRET not in page
    client.post("/settings/connections/gh/", {"GITHUB_TOKEN": ""})  # empty: the saved value stays
    assert secrets_get(user_id=alice.pk, server="gh") == {"GITHUB_TOKEN": SECRET}
    client.post("/settings/connections/gh/remove/")
    assert secrets_get(user_id=alice.pk, server="gh") == {}


def test_a_server_that_is_not_per_user_and_strangers_are_refused(per_user_config, client, alice):
    assert client.post("/settings/connections/gh/", {"GITHUB_TOKEN": SECRET}).status_code == 302  # to sign in
    assert secrets_get(user_id=alice.pk, server="gh") == {}
    client.force_login(alice)
    assert client.post("/settings/connections/time/", {"X": "y"}).status_code == 404
    assert client.get("/settings/connections/gh/").status_code == 405


def test_without_per_user_servers_the_section_is_absent(settings, tmp_path, client, alice):
    settings.APTIX_MCP_CONFIG = str(tmp_path / "none.json")
    client.force_login(alice)
    assert "Connections" not in client.get("/settings/").content.decode()
