"""The files API: upload (201 with the description; 413, 415 in the API's error shape), a file's
description, content and deletion, `files` on /api/v1/agent/execute; bearer auth before anything,
and anyone else's (or another session's) file id is a 404 naming the field."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from agents.models import AgentSession, Turn
from agents.sessions import session_create
from aptix.tokens import api_token_create
from files.models import SessionFile
from tests.helpers import ServerLikeAsyncClient, async_db
from tests.helpers.file_uploads import SALES_CSV, upload_as
from tests.helpers.files import (
    executable_bytes,
    media,  # noqa: F401 - uploads go to a temporary media directory
    png_bytes,
    uploaded,
)

FILES = "/api/v1/files"
EXECUTE = "/api/v1/agent/execute"


def _token(user) -> str:
    return api_token_create(user=user, name="ci")[1]


def _auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def _upload(token: str | None, name: str = "sales.csv", content: bytes = SALES_CSV, **fields):
    headers = _auth(token) if token else {}
    return Client().post(FILES, {"file": uploaded(name, content), **fields}, headers=headers)


@pytest.mark.django_db
def test_the_token_comes_before_anything_else(alice):
    for token in [None, "apx_wrong"]:
        response = _upload(token)
        assert response.status_code == 401 and "bearer token" in response.json()["error"]["message"]
        assert Client().get(f"{FILES}/{'0' * 32}", headers=_auth(token) if token else {}).status_code == 401
    assert SessionFile.objects.count() == 0


@pytest.mark.django_db
def test_upload_describes_the_file(alice, team_a):
    token = _token(alice)
    response = _upload(token)
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"fileId", "name", "kind", "size", "sha256", "tables", "pages"}
    assert body["kind"] == "table" and body["size"] == len(SALES_CSV) and len(body["sha256"]) == 64
    table = body["tables"][0]
    assert table["rows"] == 4 and table["columns"][0] == {"name": "region", "type": table["columns"][0]["type"]}
    assert SessionFile.objects.get(pk=body["fileId"]).session_id is None
    session = session_create(team=team_a, user=alice)
    into = _upload(token, conversationId=session.id).json()
    assert SessionFile.objects.get(pk=into["fileId"]).session_id == session.id


@pytest.mark.django_db
def test_upload_errors_are_the_apis(alice, carol, team_b, settings):
    token = _token(alice)
    refused = _upload(token, "sales.csv", executable_bytes())
    assert refused.status_code == 415 and refused.json()["error"]["field"] == "file"
    missing = Client().post(FILES, {}, headers=_auth(token))
    assert missing.status_code == 400 and missing.json()["error"]["field"] == "file"
    carols = session_create(team=team_b, user=carol)
    other = _upload(token, conversationId=carols.id)
    assert other.status_code == 404 and other.json()["error"]["field"] == "conversationId"
    assert Client().get(FILES, headers=_auth(token)).status_code == 405
    settings.APTIX_UPLOAD_MAX_BYTES = 10
    too_big = _upload(token)
    assert too_big.status_code == 413 and "10 bytes" in too_big.json()["error"]["message"]
    assert too_big.json()["error"]["field"] == "file"
    assert SessionFile.objects.count() == 0


@pytest.mark.django_db
def test_a_file_its_content_and_its_deletion(alice):
    token = _token(alice)
    picture = upload_as(alice, "dot.png", png_bytes())
    table = upload_as(alice)
    described = Client().get(f"{FILES}/{table.id}", headers=_auth(token))
    assert described.status_code == 200 and described.json()["fileId"] == table.id
    content = Client().get(f"{FILES}/{table.id}/content", headers=_auth(token))
    assert content.status_code == 200 and b"".join(content.streaming_content) == SALES_CSV
    assert content["Content-Disposition"].startswith("attachment") and content["X-Content-Type-Options"] == "nosniff"
    assert Client().get(f"{FILES}/{picture.id}/content", headers=_auth(token))["Content-Type"] == "image/png"
    deleted = Client().delete(f"{FILES}/{table.id}", headers=_auth(token))
    assert deleted.status_code == 204
    for url in [f"{FILES}/{table.id}", f"{FILES}/{table.id}/content"]:
        gone = Client().get(url, headers=_auth(token))
        assert gone.status_code == 404 and gone.json()["error"]["field"] == "fileId"


@pytest.mark.django_db
def test_someone_elses_file_is_404_everywhere_in_the_api(alice, bob):
    mine = upload_as(alice)
    token = _token(bob)
    for method, url in [
        ("get", f"{FILES}/{mine.id}"),
        ("get", f"{FILES}/{mine.id}/content"),
        ("delete", f"{FILES}/{mine.id}"),
    ]:
        response = getattr(Client(), method)(url, headers=_auth(token))
        assert response.status_code == 404 and response.json()["error"] == {
            "message": "No file with this id.",
            "field": "fileId",
        }
    assert SessionFile.objects.get(pk=mine.id).deleted_at is None


async def _execute(token: str, body: dict):
    response = await ServerLikeAsyncClient().post(
        EXECUTE, data=json.dumps(body), content_type="application/json", headers=_auth(token)
    )
    return response.status_code, json.loads(response.content)


@async_db
async def test_execute_attaches_the_files_to_the_message(llm, model, alice):
    token = await sync_to_async(_token)(alice)
    table = await sync_to_async(upload_as)(alice)
    model.reply("The North grew by 50.")
    status, body = await _execute(token, {"message": "Which region grew fastest?", "files": [table.id]})
    assert status == 200, body
    turn = await Turn.objects.aget(pk=body["turnId"])
    assert [f["fileId"] for f in turn.files] == [table.id]
    assert (await SessionFile.objects.aget(pk=table.id)).session_id == body["conversationId"]
    assert "sales.csv" in model.last_messages[-1]["content"]


@async_db
async def test_execute_refuses_a_file_of_another_user_or_session(llm, model, alice, bob, team_a):
    token = await sync_to_async(_token)(alice)
    bobs = await sync_to_async(upload_as)(bob)
    status, body = await _execute(token, {"message": "Read it", "files": [bobs.id]})
    assert status == 404 and body["error"]["field"] == "files"
    elsewhere = await sync_to_async(session_create)(team=team_a, user=alice)
    in_another = await sync_to_async(upload_as)(alice, session=elsewhere)
    status, body = await _execute(token, {"message": "Read it", "files": [in_another.id]})
    assert status == 404 and body["error"]["field"] == "files"
    for bad in ["x", [1], [""]]:
        status, body = await _execute(token, {"message": "Read it", "files": bad})
        assert status == 400 and body["error"]["field"] == "files"
    status, body = await _execute(token, {"conversationId": elsewhere.id, "toolResults": [], "files": [in_another.id]})
    assert status == 400
    assert await Turn.objects.acount() == 0 and await AgentSession.objects.acount() == 1 and model.calls == 0
