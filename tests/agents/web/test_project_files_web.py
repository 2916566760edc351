"""A project's files on its page: the Files card lists them (name, kind, size, tables, who, when), the
upload (htmx answers the card alone, a refusal with its status and reason; without JavaScript a 303
and a message), Delete, the members' download; the session page of the project shows the project's
files and says when one was deleted; nobody outside the project reaches any of it, a reader of a shared
session included."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.sessions import session_create
from agents.sharing.services import session_share
from files.models import SessionFile
from files.services import file_upload
from projects.files import project_file_delete, project_file_upload
from projects.services import project_create
from tests.helpers.file_uploads import SALES_CSV
from tests.helpers.files import executable_bytes, media, uploaded  # noqa: F401 - media: autouse fixture

pytestmark = pytest.mark.django_db
HTMX = {"HX-Request": "true"}


@pytest.fixture
def project(team_a, alice):
    return project_create(team=team_a, user=alice, name="Sales")


def upload_url(project) -> str:
    return reverse("project-file-upload", args=[project.id])


def test_the_page_lists_the_files_and_uploads_through_htmx(client, project, alice, bob):
    client.force_login(bob)
    empty = client.get(reverse("project-detail", args=[project.id])).content.decode()
    assert 'id="no-project-files"' in empty and 'id="project-file-form"' in empty
    answer = client.post(upload_url(project), {"file": uploaded("sales.csv", SALES_CSV)}, headers=HTMX)
    assert answer.status_code == 201
    card = answer.content.decode()
    assert card.strip().startswith("<section") and "sales.csv" in card and "<code>sales</code> (4 rows)" in card
    assert "bob," in card and "“sales.csv” was added to the project." in card
    client.force_login(alice)
    page = client.get(reverse("project-detail", args=[project.id])).content.decode()
    assert 'id="project-file-list"' in page and "sales.csv" in page and "table · " in page


def test_a_refused_upload_says_why_with_its_status(client, project, alice, settings):
    client.force_login(alice)
    refused = client.post(upload_url(project), {"file": uploaded("a.csv", executable_bytes())}, headers=HTMX)
    assert refused.status_code == 415 and 'id="project-file-error"' in refused.content.decode()
    missing = client.post(upload_url(project), {}, headers=HTMX)
    assert missing.status_code == 400 and "multipart field" in missing.content.decode()
    settings.APTIX_UPLOAD_MAX_BYTES = 10
    too_big = client.post(upload_url(project), {"file": uploaded("a.csv", SALES_CSV)}, headers=HTMX)
    assert too_big.status_code == 413 and "10 bytes" in too_big.content.decode()
    assert not SessionFile.objects.exists()


def test_without_javascript_the_form_posts_and_the_page_comes_back(client, project, alice):
    client.force_login(alice)
    answer = client.post(upload_url(project), {"file": uploaded("sales.csv", SALES_CSV)}, follow=True)
    assert answer.redirect_chain[-1] == (reverse("project-detail", args=[project.id]) + "#project-files", 303)
    assert "“sales.csv” was added to the project." in answer.content.decode()


def test_delete_and_download(client, project, alice, bob):
    stored = project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", SALES_CSV))
    client.force_login(bob)
    download = client.get(reverse("project-file-download", args=[project.id, stored.pk]))
    assert download.status_code == 200 and b"".join(download.streaming_content) == SALES_CSV
    assert download["Content-Disposition"].startswith("attachment")
    deleted = client.post(reverse("project-file-delete", args=[project.id, stored.pk]), headers=HTMX)
    assert deleted.status_code == 200 and 'id="no-project-files"' in deleted.content.decode()
    stored.refresh_from_db()
    assert stored.deleted_at is not None
    assert client.get(reverse("project-file-download", args=[project.id, stored.pk])).status_code == 404


def test_outsiders_get_not_found_everywhere(client, team_a, alice, bob, carol):
    board = project_create(team=team_a, user=alice, name="Board", members=["alice"])
    stored = project_file_upload(user=alice, project=board, uploaded=uploaded("sales.csv", SALES_CSV))
    for outsider in (bob, carol):
        client.force_login(outsider)
        assert client.get(reverse("project-detail", args=[board.id])).status_code == 404
        assert client.post(upload_url(board), {"file": uploaded("x.csv", SALES_CSV)}).status_code == 404
        assert client.get(reverse("project-file-download", args=[board.id, stored.pk])).status_code == 404
        assert client.post(reverse("project-file-delete", args=[board.id, stored.pk])).status_code == 404
        assert client.get(reverse("file-download", args=[stored.pk])).status_code == 404  # a crafted id
    stored.refresh_from_db()
    assert stored.deleted_at is None and SessionFile.objects.count() == 1


def test_a_file_of_another_project_is_not_found_through_this_one(client, team_a, alice, project):
    other = project_create(team=team_a, user=alice, name="Other")
    stored = project_file_upload(user=alice, project=other, uploaded=uploaded("sales.csv", SALES_CSV))
    client.force_login(alice)
    assert client.get(reverse("project-file-download", args=[project.id, stored.pk])).status_code == 404
    assert client.post(reverse("project-file-delete", args=[project.id, stored.pk])).status_code == 404


def test_the_session_page_shows_the_projects_files_and_says_when_one_is_deleted(client, team_a, project, alice):
    session = session_create(team=team_a, user=alice, project=project)
    stored = project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", SALES_CSV))
    client.force_login(alice)
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert 'id="project-files-body"' in page and reverse("project-file-download", args=[project.id, stored.pk]) in page
    assert 'id="project-files-gone"' not in page
    project_file_delete(user=alice, project=project, file_id=stored.pk)
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert 'id="project-files-gone"' in page and "<strong>sales.csv</strong> was deleted from the project" in page
    assert reverse("project-file-download", args=[project.id, stored.pk]) not in page


def test_a_session_moved_in_shows_the_projects_table_under_the_name_it_queries(client, team_a, project, alice):
    session = session_create(team=team_a, user=alice)
    upload_into = uploaded("sales.csv", SALES_CSV)
    file_upload(owner=alice, uploaded=upload_into, session=session)
    project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", SALES_CSV))
    client.force_login(alice)
    client.post(reverse("session-project", args=[session.id]), {"project": project.id})
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    project_part = page[page.index('id="project-files-body"') :]
    assert "table <code>sales_2</code>" in project_part


def test_a_shared_sessions_reader_outside_the_project_never_gets_its_files(client, team_a, alice, bob):
    board = project_create(team=team_a, user=alice, name="Board", members=["alice"])
    session = session_create(team=team_a, user=alice, project=board)
    stored = project_file_upload(user=alice, project=board, uploaded=uploaded("secret.csv", SALES_CSV))
    session_share(session=session, user=alice, shared=True)
    client.force_login(bob)
    page = client.get(reverse("session-detail", args=[session.id]))
    assert page.status_code == 200 and "secret.csv" not in page.content.decode()
    assert client.get(reverse("file-download", args=[stored.pk])).status_code == 404
    assert client.get(reverse("project-file-download", args=[board.id, stored.pk])).status_code == 404
