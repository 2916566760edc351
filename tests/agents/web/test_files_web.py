"""Files on the page: the composer's upload (JSON for the chips: 201, 413 and 415 with the server's
reason), a message that carries files (the turn keeps them, the session gets them, the page shows
them), the download and the Files panel's delete; anyone else's file is a 404 everywhere."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.models import AgentSession, Turn
from agents.runner import get_runner
from agents.sessions import session_create
from files.models import SessionFile
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.file_uploads import SALES_CSV, upload_as
from tests.helpers.files import (
    executable_bytes,
    media,  # noqa: F401 - uploads go to a temporary media directory
    png_bytes,
    uploaded,
)


def _signed_in(client, user, password):
    client.login(username=user.get_username(), password=password)
    return client


@pytest.mark.django_db
def test_the_composer_uploads_a_file_and_gets_its_description(client, alice, password):
    _signed_in(client, alice, password)
    response = client.post(reverse("file-upload"), {"file": uploaded("sales.csv", SALES_CSV)})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "sales.csv" and body["kind"] == "table" and body["size"] == len(SALES_CSV)
    assert body["tables"][0]["rows"] == 4 and [c["name"] for c in body["tables"][0]["columns"]] == [
        "region",
        "q2",
        "q3",
    ]
    stored = SessionFile.objects.get(pk=body["fileId"])
    assert stored.owner_id == alice.id and stored.session_id is None  # the uploader's until first attached


@pytest.mark.django_db
def test_an_upload_refused_says_why_with_its_status(client, alice, password, settings):
    _signed_in(client, alice, password)
    refused = client.post(reverse("file-upload"), {"file": uploaded("sales.csv", executable_bytes())})
    assert refused.status_code == 415 and refused.json()["error"]["message"]
    settings.APTIX_UPLOAD_MAX_BYTES = 10
    too_big = client.post(reverse("file-upload"), {"file": uploaded("sales.csv", SALES_CSV)})
    assert too_big.status_code == 413 and "10 bytes" in too_big.json()["error"]["message"]
    missing = client.post(reverse("file-upload"), {})
    assert missing.status_code == 400 and "'file'" in missing.json()["error"]["message"]
    assert SessionFile.objects.count() == 0


@pytest.mark.django_db
def test_uploading_needs_a_signed_in_user_and_the_csrf_token(alice, password):
    from django.test import Client

    anonymous = Client().post(reverse("file-upload"), {"file": uploaded("sales.csv", SALES_CSV)})
    assert anonymous.status_code == 401 and "Sign in" in anonymous.json()["error"]["message"]
    strict = _signed_in(Client(enforce_csrf_checks=True), alice, password)
    assert strict.post(reverse("file-upload"), {"file": uploaded("sales.csv", SALES_CSV)}).status_code == 403
    assert SessionFile.objects.count() == 0


@pytest.mark.django_db
def test_the_download_is_the_owners_only(client, alice, bob, password):
    mine = upload_as(alice)
    picture = upload_as(alice, "dot.png", png_bytes())
    _signed_in(client, alice, password)
    response = client.get(reverse("file-download", args=[mine.id]))
    assert response.status_code == 200 and b"".join(response.streaming_content) == SALES_CSV
    assert (
        response["Content-Disposition"].startswith("attachment")
        and 'filename="sales.csv"' in response["Content-Disposition"]
    )
    assert response["X-Content-Type-Options"] == "nosniff" and response["Content-Type"] == "application/octet-stream"
    image = client.get(reverse("file-download", args=[picture.id]))
    assert image["Content-Type"] == "image/png"  # the page's thumbnail shows it
    thumb = client.get(reverse("file-download", args=[picture.id]) + "?thumb=1")
    assert thumb.status_code == 200 and thumb["Content-Type"] == "image/png"
    client.logout()
    _signed_in(client, bob, password)
    for url in [reverse("file-download", args=[mine.id]), reverse("file-download", args=["0" * 32])]:
        assert client.get(url).status_code == 404
    assert client.post(reverse("file-delete", args=[mine.id])).status_code == 404
    assert SessionFile.objects.get(pk=mine.id).deleted_at is None


@pytest.mark.django_db
def test_the_files_panel_lists_the_sessions_files_and_deletes_them(client, team_a, alice, password):
    session = session_create(team=team_a, user=alice)
    stored = upload_as(alice, session=session)
    _signed_in(client, alice, password)
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert 'popovertarget="files-panel">Files</button>' in page and "sales.csv" in page
    assert reverse("file-delete", args=[stored.id]) in page and 'id="attach-button"' in page
    response = client.post(reverse("file-delete", args=[stored.id]))
    assert response.status_code == 200
    panel = response.content.decode()
    assert 'id="files-body" hx-swap-oob="true"' in panel and "sales.csv" not in panel and "No files yet" in panel
    assert SessionFile.objects.get(pk=stored.id).deleted_at is not None
    assert client.get(reverse("file-download", args=[stored.id])).status_code == 404
    unattached = upload_as(alice)  # a chip removed before sending: nothing to redraw
    assert client.post(reverse("file-delete", args=[unattached.id])).status_code == 204


async def _client(user, password):
    client = ServerLikeAsyncClient()
    await sync_to_async(client.login)(username=user.get_username(), password=password)
    return client


@async_db
async def test_a_message_carries_its_files_to_the_turn_and_the_session(llm, model, team_a, alice, password):
    session = await sync_to_async(session_create)(team=team_a, user=alice)
    table = await sync_to_async(upload_as)(alice)
    picture = await sync_to_async(upload_as)(alice, "dot.png", png_bytes())
    client = await _client(alice, password)
    model.reply("Noted.")
    response = await client.post(
        reverse("turn-new", args=[session.id]), {"message": "Look at these", "files": [table.id, picture.id]}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "sales.csv" in html and "dot.png" in html and 'id="files-body" hx-swap-oob="true"' in html
    turn = await get_runner().wait((await Turn.objects.aget(session=session)).id)
    assert [f["name"] for f in turn.files] == ["sales.csv", "dot.png"]
    assert turn.files[0]["preview"]["columns"][:3] == ["region", "q2", "q3"]
    assert {f.session_id async for f in SessionFile.objects.all()} == {session.id}
    page = (await client.get(reverse("session-detail", args=[session.id]))).content.decode()
    assert 'class="turn-files"' in page and "<td>North</td>" in page  # a table's first rows
    assert f'{reverse("file-download", args=[picture.id])}?thumb=1' in page  # an image's thumbnail
    # The model was told what came with the message.
    said = model.last_messages[-1]["content"]
    assert "sales.csv" in said and "files_query" in said and "cannot see images" in said


@async_db
async def test_someone_elses_file_on_a_message_is_404_and_starts_nothing(llm, model, team_a, alice, bob, password):
    session = await sync_to_async(session_create)(team=team_a, user=alice)
    bobs = await sync_to_async(upload_as)(bob)
    client = await _client(alice, password)
    response = await client.post(reverse("turn-new", args=[session.id]), {"message": "Read it", "files": [bobs.id]})
    assert response.status_code == 404
    response = await client.post(
        reverse("session-new"),
        {"team": team_a.id, "mode": "general", "execution": "ask", "message": "Hi", "files": [bobs.id]},
    )
    assert response.status_code == 404
    assert await Turn.objects.acount() == 0 and await AgentSession.objects.acount() == 1
    assert (await SessionFile.objects.aget(pk=bobs.id)).session_id is None
    assert model.calls == 0


@async_db
async def test_the_first_message_attaches_the_files_uploaded_before_the_session(llm, model, team_a, alice, password):
    table = await sync_to_async(upload_as)(alice)
    client = await _client(alice, password)
    model.reply("Got it.")
    response = await client.post(
        reverse("session-new"),
        {
            "team": team_a.id,
            "mode": "general",
            "execution": "ask",
            "message": "Which region grew fastest?",
            "files": [table.id],
        },
    )
    assert response.status_code == 302
    session = await AgentSession.objects.aget()
    assert (await SessionFile.objects.aget(pk=table.id)).session_id == session.id
    turn = await get_runner().wait((await Turn.objects.aget(session=session)).id)
    assert turn.files[0]["fileId"] == table.id


@pytest.mark.django_db
def test_a_refused_first_message_keeps_its_files_as_chips(client, team_a, alice, password):
    table = upload_as(alice)
    _signed_in(client, alice, password)
    response = client.post(
        reverse("session-new"),
        {"team": team_a.id, "mode": "general", "execution": "ask", "message": " ", "files": [table.id]},
    )
    assert response.status_code == 400
    html = response.content.decode()
    start = html.index('data-files="') + len('data-files="')
    carried = json.loads(html[start : html.index('"', start)].replace("&quot;", '"'))
    assert carried == [{"fileId": table.id, "name": "sales.csv", "size": len(SALES_CSV)}]


@async_db
async def test_the_export_lists_each_turns_files(llm, model, team_a, alice, password):
    session = await sync_to_async(session_create)(team=team_a, user=alice)
    table = await sync_to_async(upload_as)(alice)
    client = await _client(alice, password)
    model.reply("Done.")
    await client.post(reverse("turn-new", args=[session.id]), {"message": "Sum it", "files": [table.id]})
    await get_runner().wait((await Turn.objects.aget(session=session)).id)
    data = json.loads((await client.get(reverse("session-export", args=[session.id, "json"]))).content)
    files = data["turns"][0]["files"]
    assert files[0]["fileId"] == table.id and files[0]["name"] == "sales.csv" and files[0]["kind"] == "table"
    assert files[0]["url"].endswith(reverse("file-download", args=[table.id])) and files[0]["tables"][0]["rows"] == 4
    markdown = (await client.get(reverse("session-export", args=[session.id, "md"]))).content.decode()
    assert "**Files:**" in markdown and "[sales.csv](http://testserver/files/" in markdown and "4 rows" in markdown


@pytest.mark.django_db
def test_every_tab_sees_the_files_a_message_carried(team_a, alice):
    """The stream draws a turn that carried files with them, and redraws the Files panel (a message
    sent from another tab, or through the API)."""
    from agents.turns import turn_start
    from agents.web.live import LiveRenderer

    session = session_create(team=team_a, user=alice, execution="ask")
    table = upload_as(alice)
    turn = turn_start(session=session, text="Sum it", files=[table.id])
    started = {"mode": "general", "execution": "ask", "model": "offline", "max_steps": 1, "tool_kinds": {}}
    html = LiveRenderer(session).render(turn, "turn.started", started, 1)
    assert 'class="turn-files"' in html and 'id="files-body" hx-swap-oob="true"' in html
    assert reverse("file-download", args=[table.id]) in html
