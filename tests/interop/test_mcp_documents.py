"""The documents kept beside the user's conversations (a DDR, a workflow) as the MCP server's
resources, `aptix://documents/<id>`, read as their current version's Markdown: the user's own only —
not a teammate's, not one of a conversation shared with the team, not a made-up id."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from mcp.shared.exceptions import MCPError

from agents.documents.services import document_write
from agents.sessions import session_create
from agents.sharing.services import session_share
from aptix.tokens import api_token_create
from tests.helpers import async_db
from tests.helpers.interop import mcp_client

pytestmark = async_db


def write(session, title: str, *versions: str) -> str:
    document_id = None
    for content in versions:
        version = document_write(session_id=session.id, title=title, content=content, document_id=document_id)
        document_id = version.document_id
    assert document_id is not None
    return document_id


@pytest.fixture
async def drafts(alice, bob, team_a):
    """A document of alice's (two versions), one of a conversation of alice's in data-analysis, and one
    of bob's conversation, which bob shares with their team."""

    def make():
        mine = session_create(team=team_a, user=alice, mode="general")
        analysis = session_create(team=team_a, user=alice, mode="data-analysis")
        bobs = session_create(team=team_a, user=bob, mode="general")
        session_share(session=bobs, user=bob, shared=True)
        return {
            "ddr": write(mine, "DDR-12 Caching", "# DDR-12\n\nFirst draft.", "# DDR-12\n\nDecided: Redis."),
            "analysis": write(analysis, "Order counts", "42 orders."),
            "bobs": write(bobs, "Bob's plan", "Bob's secret plan."),
        }

    return await sync_to_async(make)()


async def test_the_users_documents_are_resources_read_as_their_current_version(alice_token, drafts):
    async with mcp_client(alice_token) as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        read = await client.read_resource(f"aptix://documents/{drafts['ddr']}")
    documents = {uri for uri in listed if uri.startswith("aptix://documents/")}
    assert documents == {f"aptix://documents/{drafts['ddr']}", f"aptix://documents/{drafts['analysis']}"}
    ddr = listed[f"aptix://documents/{drafts['ddr']}"]
    assert ddr.title == "DDR-12 Caching" and ddr.mime_type == "text/markdown" and "version 2" in ddr.description
    assert read.contents[0].text == "# DDR-12\n\nDecided: Redis."
    assert read.contents[0].mime_type == "text/markdown"


async def test_anyone_elses_document_or_a_crafted_id_is_refused(alice_token, drafts):
    async with mcp_client(alice_token) as client:
        for crafted in (
            f"aptix://documents/{drafts['bobs']}",  # a teammate's, though shared with the team
            "aptix://documents/0123456789abcdef0123456789abcdef",
            "aptix://documents/../conversations/x",
        ):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(crafted)
            assert refused.value.message == "No document with this id.", crafted


async def test_a_mode_limited_token_reads_only_its_modes_documents(alice, drafts):
    _, secret = await sync_to_async(api_token_create)(user=alice, modes=["data-analysis"])
    async with mcp_client(secret) as client:
        listed = [str(r.uri) for r in (await client.list_resources()).resources if "documents" in str(r.uri)]
        assert (await client.read_resource(listed[0])).contents[0].text == "42 orders."
        with pytest.raises(MCPError):
            await client.read_resource(f"aptix://documents/{drafts['ddr']}")
    assert listed == [f"aptix://documents/{drafts['analysis']}"]
