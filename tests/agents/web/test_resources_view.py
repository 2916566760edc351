"""A resource link in an MCP tool result opens the content: the card links to the session's resource
view, which reads the URI on the server that lists it, for the session's owner only; a URI no
server offers is 404."""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest
from asgiref.sync import sync_to_async

from modes.models import AgentMode
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.mcp import guide_entry, ready_host

pytestmark = [async_db, pytest.mark.slow]  # a real MCP server process


@pytest.fixture(scope="module")
def guide_host(tmp_path_factory):
    with ready_host(tmp_path_factory.mktemp("mcp"), {"guide": guide_entry()}, serving=True) as host:
        yield host  # the process's host: the one the reasoner, views and API use


async def signed_in(user, password) -> ServerLikeAsyncClient:
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username=user.username, password=password)
    return client


async def test_a_resource_link_opens_the_content_for_the_owner_only(
    guide_host, make_session, model, run_turn, alice, bob, password
):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    session = await make_session(mode="general", execution="agent")
    model.reply("", tool_calls=[("guide__link", {})])
    model.reply("There it is.")
    await run_turn(session, text="Where is the readme?")

    owner = await signed_in(alice, password)
    page = (await owner.get(f"/sessions/{session.id}/")).content.decode()
    [href] = re.findall(
        r'<a href="(/sessions/[^"]+/resource/\?uri=[^"]+)" target="_blank" rel="noopener">readme</a>', page
    )
    assert unquote(href.split("uri=")[1]) == "guide://readme"
    response = await owner.get(href.replace("&amp;", "&"))
    assert response.status_code == 200 and response["Content-Type"] == "text/plain; charset=utf-8"
    assert b"Greet people by name." in response.content

    assert (await (await signed_in(bob, password)).get(href)).status_code == 404
    refused = await owner.get(f"/sessions/{session.id}/resource/?uri=https%3A%2F%2Fexample.com%2F")
    assert (
        refused.status_code == 404
        and refused.content == b"No MCP server here offers the resource https://example.com/."
    )


async def test_a_resource_is_never_served_as_html(guide_host, make_session, alice, password):
    session = await make_session(mode="general", execution="agent")
    owner = await signed_in(alice, password)
    page = await owner.get(f"/sessions/{session.id}/resource/?uri=guide%3A%2F%2Fpage.html")
    assert page.status_code == 200 and page["Content-Type"] == "text/plain; charset=utf-8"
    assert page["X-Content-Type-Options"] == "nosniff"
    assert b"<script>alert('never run')</script>" in page.content  # as text, to read
    image = await owner.get(f"/sessions/{session.id}/resource/?uri=guide%3A%2F%2Fpixel.png")
    assert image["Content-Type"] == "image/png" and "Content-Disposition" not in image
