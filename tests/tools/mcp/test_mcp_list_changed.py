"""A server's prompts and resources follow its notifications/prompts/list_changed and
notifications/resources/list_changed (on a 2026-07-28 session: its subscriptions/listen stream), as
its tools follow tools/list_changed: what the server adds at runtime is listed (prompts API, Attach)
and read (`mcp_read_resource`) without a restart."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.mcp import by_name, ready_host
from tools.registry import ToolRegistry

pytestmark = pytest.mark.slow  # real subprocesses (servers)

CHANGING = Path(__file__).with_name("changing_server.py")


@pytest.fixture
def changing(tmp_path):
    registry = ToolRegistry("mcp")
    entry = {"command": sys.executable, "args": [str(CHANGING)]}
    with ready_host(tmp_path, {"changing": entry}, registry=registry) as host:
        yield host, registry


def listed(statuses) -> tuple[list[str], list[str]]:
    status = by_name(statuses)["changing"]
    return [p.name for p in status.prompts], [r.uri for r in status.resources]


async def test_prompts_and_resources_added_at_runtime_are_listed_and_read(changing):
    host, registry = changing
    assert listed(host.status()) == (["opening"], ["changing://first"])
    assert host.server_of("changing://late") is None

    added = await registry.get("changing__add_entries").execute(json.dumps({"name": "late"}), None)
    assert added.result == "added"

    statuses = await host.wait_until(lambda s: "late" in listed(s)[0] and "changing://late" in listed(s)[1], 10)
    assert listed(statuses) == (["opening", "late"], ["changing://first", "changing://late"])
    assert [p["name"] for p in host.prompts()] == ["opening", "late"]
    prompt = await host.get_prompt("changing", "late", {}, user_id=None)
    assert "The late prompt, added at runtime." in prompt.text
    read = await host.read_resource("changing://late", user_id=None)
    assert read.successful and "The late resource, added at runtime." in read.content_for_model()
