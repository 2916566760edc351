"""Rich content of MCP tool results, with a real server (rich_server.py). Images
are stored per session and shown in the tool card (and served to nobody but whoever may see that
session), other blobs are labelled downloads served as attachments, links are links only for
http/https, embedded resources are collapsible text; a vision model gets the image itself, any
other model a placeholder naming it."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import mcp_types as types
import pytest
from asgiref.sync import sync_to_async
from django.core.files.storage import FileSystemStorage
from django.test import Client

from agents.llm import LLMClient
from agents.web.timeline import render_turn
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.scripted_model import openai_client
from tools.mcp.host import McpHost
from tools.mcp.rich import MAX_ATTACHMENTS, format_result, store_attachments
from tools.registry import mcp_registry

from .rich_server import AUDIO, SVG, png

pytestmark = pytest.mark.slow  # real subprocesses (servers, workers, web processes)

RICH = Path(__file__).with_name("rich_server.py")
READY_TIMEOUT = 60


@pytest.fixture(scope="module")
def rich_host(tmp_path_factory):
    """The rich server in the process-wide MCP registry (what the reasoner offers tools from)."""
    config = tmp_path_factory.mktemp("mcp") / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"rich": {"command": sys.executable, "args": [str(RICH)]}}}))
    host = McpHost(config)
    host.start()
    statuses = host.wait_until_sync(lambda s: all(x.settled for x in s), READY_TIMEOUT)
    assert [s.state for s in statuses] == ["ready"], statuses
    yield host
    host.stop()
    assert not [name for name, _ in mcp_registry if name.startswith("rich__")]


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
async def agent_session(make_session):
    await AgentMode.objects.filter(key="general").aupdate(tool_policy=["*"])
    return await make_session(mode="general", execution="agent")


async def gallery_turn(session, model, run_turn, answer="Here it is."):
    model.reply("", tool_calls=[("rich__gallery", {})])
    model.reply(answer)
    turn = await run_turn(session, text="Show me the gallery")
    [result] = [e.payload async for e in turn.events.filter(type="tool.result")]
    return turn, result


@async_db
async def test_every_kind_of_content_is_kept_for_the_card_and_the_session(
    rich_host, agent_session, model, run_turn, media_root
):
    _, result = await gallery_turn(agent_session, model, run_turn)
    assert result["ok"] and result["text"] == "Here is the chart."
    by_kind = {}
    for item in result["attachments"]:
        by_kind.setdefault(item["kind"], []).append(item)

    [image] = by_kind["image"]
    assert image["url"].startswith(f"/media/images/{agent_session.id}/") and image["url"].endswith(".png")
    assert (media_root / image["path"]).read_bytes() == png()
    assert (image["mime"], image["width"], image["height"]) == ("image/png", 40, 30)

    files = {f["name"]: f for f in by_kind["file"]}
    assert set(files) == {"image.svg", "audio.wav", "table.bin"}  # an SVG is never shown inline
    assert (media_root / files["image.svg"]["path"]).read_bytes() == SVG
    assert (media_root / files["audio.wav"]["path"]).read_bytes() == AUDIO
    assert all(f["url"].startswith(f"/media/files/{agent_session.id}/") for f in files.values())

    links = {link["name"]: link for link in by_kind["link"]}
    assert links["report"]["url"] == "https://example.com/report.pdf"
    assert "url" not in links["trap"] and links["trap"]["uri"] == "javascript:alert(1)"
    [resource] = by_kind["resource"]
    assert (resource["name"], resource["text"]) == ("readme.md", "# Notes\nline two")

    # What the model read names each thing and where the user sees the image.
    tool_message = model.last_messages[-1]
    assert tool_message["role"] == "tool" and "images" not in tool_message
    assert f"[image 1 (image/png, 40×30, {len(png())} bytes): {image['url']}" in tool_message["content"]
    assert "# Notes\nline two" in tool_message["content"] and "[file audio.wav (audio/wav" in tool_message["content"]


@async_db
async def test_the_card_shows_images_links_resources_and_downloads(
    rich_host, agent_session, model, run_turn, media_root
):
    turn, result = await gallery_turn(agent_session, model, run_turn)
    events = [e async for e in turn.events.order_by("seq")]
    html = await sync_to_async(render_turn)(turn, events)
    image = next(a for a in result["attachments"] if a["kind"] == "image")
    audio = next(a for a in result["attachments"] if a["name"] == "audio.wav")

    assert f'<img src="{image["url"]}" alt="image.png from rich__gallery"' in html
    link = '<a href="https://example.com/report.pdf" target="_blank" rel="noopener noreferrer nofollow">report</a>'
    assert link in html
    assert 'href="javascript:' not in html and "<code>javascript:alert(1)</code>" in html
    assert '<details class="tool-resource"><summary>readme.md' in html and "# Notes\nline two</pre>" in html
    assert f'<a href="{audio["url"]}" download="audio.wav"><svg class="icon icon-download"' in html
    assert '</svg> audio.wav</a>' in html  # the download mark is an icon, not a glyph a font may lack
    assert "audio/wav · 44\xa0bytes" in html


@async_db
async def test_an_image_the_answer_shows_is_not_repeated_under_the_card(
    rich_host, agent_session, model, run_turn, media_root
):
    turn, result = await gallery_turn(agent_session, model, run_turn)
    image_url = next(a["url"] for a in result["attachments"] if a["kind"] == "image")
    events = [e async for e in turn.events.order_by("seq")]
    assert f'<img src="{image_url}"' in await sync_to_async(render_turn)(turn, events)

    turn.answer = f"The chart: ![a red chart]({image_url})"  # the model showed it in its answer
    html = await sync_to_async(render_turn)(turn, events)
    assert html.count(f'src="{image_url}"') == 1 and f'<img src="{image_url}" alt="a red chart"' in html
    assert "audio.wav" in html  # the rest of the card stays


def media_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@async_db
async def test_stored_content_is_served_to_the_sessions_owner_only(
    rich_host, agent_session, model, run_turn, media_root, alice, bob, carol
):
    _, result = await gallery_turn(agent_session, model, run_turn)
    image = next(a for a in result["attachments"] if a["kind"] == "image")
    svg = next(a for a in result["attachments"] if a["name"] == "image.svg")

    def fetch(user, url):
        client = media_client(user) if user else Client()
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.status_code == 200 else b""
        return response, body

    shown, body = await sync_to_async(fetch)(alice, image["url"])
    assert (shown.status_code, shown["Content-Type"], body) == (200, "image/png", png())
    assert shown["Content-Disposition"].startswith("inline") and shown["X-Content-Type-Options"] == "nosniff"

    download, body = await sync_to_async(fetch)(alice, svg["url"])
    assert download.status_code == 200 and body == SVG
    assert download["Content-Type"] == "application/octet-stream"
    assert download["Content-Disposition"] == 'attachment; filename="image.svg"'

    for other in (bob, carol):  # bob: same team, not his session; carol: another team
        for url in (image["url"], svg["url"]):
            refused, _ = await sync_to_async(fetch)(other, url)
            assert refused.status_code == 404
    anonymous, _ = await sync_to_async(fetch)(None, svg["url"])
    assert anonymous.status_code == 302


@async_db
async def test_a_vision_model_sees_the_image_and_another_model_a_placeholder(
    rich_host, agent_session, model, run_turn, media_root
):
    vision = LLMClient(openai_client(model, max_retries=0, timeout=5), model="scripted-model", label="v", vision=True)
    try:
        model.reply("", tool_calls=[("rich__gallery", {})])
        model.reply("I see a red rectangle.")
        await run_turn(agent_session, text="What does the chart show?", reasoner=_reasoner(vision))
    finally:
        await vision.client.close()
    messages = model.last_messages
    tool_index = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    images = messages[tool_index + 1]
    assert images["role"] == "user" and images["content"][0]["type"] == "text"
    assert images["content"][0]["text"].startswith("The images of the tool results above, in order (image 1: /media/")
    [part] = images["content"][1:]
    assert part["type"] == "image_url"
    prefix = "data:image/png;base64,"
    assert part["image_url"]["url"].startswith(prefix)
    assert base64.b64decode(part["image_url"]["url"].removeprefix(prefix)) == png()
    assert "images" not in messages[tool_index]  # our bookkeeping never goes out

    model.reply("", tool_calls=[("rich__gallery", {})])
    model.reply("There is an image.")
    await run_turn(agent_session, text="And without vision?")  # the default scripted client: no vision
    sent = model.last_messages
    assert all(isinstance(m.get("content"), str) or m.get("content") is None for m in sent)
    assert "[image 1 (image/png, 40×30" in sent[-1]["content"]


def _reasoner(client):
    from agents.run.reasoner import Reasoner

    return Reasoner(llm=client)


def test_a_result_shows_at_most_max_attachments_and_nothing_is_stored_without_a_session(tmp_path):

    image = types.ImageContent(type="image", data=base64.b64encode(png()).decode(), mime_type="image/png")
    result = format_result(types.CallToolResult(content=[image] * (MAX_ATTACHMENTS + 2)), "rich__many")
    assert len(result.attachments) == MAX_ATTACHMENTS
    assert result.parts[-1] == f"[image image.png left out: over {MAX_ATTACHMENTS} attachments in one result]"

    storage = FileSystemStorage(location=tmp_path)
    unstored = store_attachments(result, None, storage)
    assert not any(tmp_path.iterdir()) and all(not a.url for a in unstored.attachments)
    stored = store_attachments(result, "a" * 32, storage)
    assert len(list((tmp_path / "images" / ("a" * 32)).iterdir())) == MAX_ATTACHMENTS
    assert stored.result.count("[image ") == MAX_ATTACHMENTS + 2  # numbered placeholders + the two left out
