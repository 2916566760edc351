"""A project's files on the API: upload (201 with exactly the files API's description, tables
included), list, delete (204); bearer auth before anything; non-members and other teams get 404; the
files API's 400, 413 and 415; a crafted file id of another project or of a session is a 404."""

from __future__ import annotations

import pytest
from django.test import Client

from agents.sessions import session_create
from aptix.tokens import api_token_create
from files.models import FileAudit, SessionFile
from projects.files import project_file_upload
from projects.services import project_create
from tests.helpers.file_uploads import SALES_CSV, upload_as
from tests.helpers.files import executable_bytes, media, uploaded  # noqa: F401 - media: autouse fixture

pytestmark = pytest.mark.django_db


def _auth(user) -> dict:
    return {"Authorization": f"Bearer {api_token_create(user=user, name='ci')[1]}"}


def _files(project_id: str) -> str:
    return f"/api/v1/projects/{project_id}/files"


@pytest.fixture
def project(team_a, alice):
    return project_create(team=team_a, user=alice, name="Sales")


def test_the_token_comes_before_anything_else(project):
    for headers in ({}, {"Authorization": "Bearer apx_wrong"}):
        assert (
            Client().post(_files(project.pk), {"file": uploaded("a.csv", SALES_CSV)}, headers=headers).status_code
            == 401
        )
        assert Client().get(_files(project.pk), headers=headers).status_code == 401
        assert Client().delete(f"{_files(project.pk)}/{'0' * 32}", headers=headers).status_code == 401
    assert not SessionFile.objects.exists()


def test_upload_answers_the_files_apis_description_then_list_and_delete(project, alice, bob):
    response = Client().post(_files(project.pk), {"file": uploaded("sales.csv", SALES_CSV)}, headers=_auth(bob))
    assert response.status_code == 201
    body = response.json()
    same = Client().post("/api/v1/files", {"file": uploaded("sales.csv", SALES_CSV)}, headers=_auth(bob)).json()
    assert set(body) == set(same) == {"fileId", "name", "kind", "size", "sha256", "tables", "pages"}
    assert body["tables"] == same["tables"] and body["tables"][0]["name"] == "sales"
    assert SessionFile.objects.get(pk=body["fileId"]).project_id == project.pk
    listed = Client().get(_files(project.pk), headers=_auth(alice))
    assert listed.status_code == 200
    [entry] = listed.json()["files"]
    assert entry["fileId"] == body["fileId"] and entry["uploadedBy"] == "bob" and entry["tables"] == body["tables"]
    deleted = Client().delete(f"{_files(project.pk)}/{body['fileId']}", headers=_auth(alice))
    assert deleted.status_code == 204
    assert Client().get(_files(project.pk), headers=_auth(alice)).json() == {"files": []}
    assert FileAudit.objects.get(file_id=body["fileId"], action="delete").project_id == project.pk
    again = Client().delete(f"{_files(project.pk)}/{body['fileId']}", headers=_auth(alice))
    assert again.status_code == 404 and again.json()["error"]["field"] == "fileId"


def test_errors_name_the_problem(project, alice, settings):
    refused = Client().post(_files(project.pk), {"file": uploaded("a.csv", executable_bytes())}, headers=_auth(alice))
    assert refused.status_code == 415 and refused.json()["error"]["field"] == "file"
    missing = Client().post(_files(project.pk), {}, headers=_auth(alice))
    assert missing.status_code == 400 and "'file'" in missing.json()["error"]["message"]
    assert Client().put(_files(project.pk), headers=_auth(alice)).status_code == 405
    settings.APTIX_UPLOAD_MAX_BYTES = 10
    too_big = Client().post(_files(project.pk), {"file": uploaded("a.csv", SALES_CSV)}, headers=_auth(alice))
    assert too_big.status_code == 413 and "10 bytes" in too_big.json()["error"]["message"]
    assert not SessionFile.objects.exists()


def test_non_members_and_other_teams_get_not_found(team_a, alice, bob, carol):
    board = project_create(team=team_a, user=alice, name="Board", members=["alice"])
    stored = project_file_upload(user=alice, project=board, uploaded=uploaded("sales.csv", SALES_CSV))
    for outsider in (bob, carol):
        headers = _auth(outsider)
        posted = Client().post(_files(board.pk), {"file": uploaded("x.csv", SALES_CSV)}, headers=headers)
        assert posted.status_code == 404 and posted.json()["error"]["field"] == "projectId"
        assert Client().get(_files(board.pk), headers=headers).status_code == 404
        assert Client().delete(f"{_files(board.pk)}/{stored.pk}", headers=headers).status_code == 404
        # The session-file routes do not reach it either.
        assert Client().get(f"/api/v1/files/{stored.pk}", headers=headers).status_code == 404
        assert Client().get(f"/api/v1/files/{stored.pk}/content", headers=headers).status_code == 404
    assert Client().get(_files("0" * 32), headers=_auth(alice)).status_code == 404
    assert SessionFile.objects.filter(deleted_at__isnull=True).count() == 1


def test_a_crafted_file_id_of_another_project_or_a_session_is_not_found(team_a, alice, project):
    other = project_create(team=team_a, user=alice, name="Other")
    elsewhere = project_file_upload(user=alice, project=other, uploaded=uploaded("sales.csv", SALES_CSV))
    session = session_create(team=team_a, user=alice)
    own = upload_as(alice, session=session)
    for file_id in (elsewhere.pk, own.pk, "not-an-id"):
        refused = Client().delete(f"{_files(project.pk)}/{file_id}", headers=_auth(alice))
        assert refused.status_code == 404
    assert SessionFile.objects.filter(deleted_at__isnull=True).count() == 2
