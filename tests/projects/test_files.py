"""A project's files: uploaded once by a member through the session files' pipeline (limits, sniffing,
storage, quota), named apart from the tables of the project's sessions, listed and deleted by members
only, each upload and deletion a FileAudit row with the project's id, announced to the knowledge side."""

from __future__ import annotations

import pytest
from django.core.files.storage import default_storage
from django.db import transaction

from agents.sessions import session_create
from files.models import FileAudit, SessionFile
from files.services import FileRefused, file_delete, file_get, file_upload, files_attach
from projects.files import project_file_delete, project_file_get, project_file_list, project_file_upload
from projects.services import ProjectNotFoundError, project_create, project_delete
from projects.signals import project_file_added, project_file_removed
from tests.helpers.files import csv_plain, media, pdf_bytes, uploaded  # noqa: F401 - media: autouse fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(team_a, alice):
    return project_create(team=team_a, user=alice, name="Sales")


def test_a_member_uploads_a_table_once_for_the_project(project, bob):
    stored = project_file_upload(user=bob, project=project, uploaded=uploaded("sales.csv", csv_plain()))
    assert (stored.project_id, stored.session_id, stored.owner_id) == (project.pk, None, bob.pk)
    assert [t["name"] for t in stored.tables] == ["sales"] and stored.tables[0]["rows"] == 6
    assert default_storage.exists(stored.storage_name) and default_storage.exists(stored.data_name)
    assert [f.pk for f in project_file_list(user=bob, project=project)] == [stored.pk]
    audit = FileAudit.objects.get(file_id=stored.pk)
    assert (audit.action, audit.project_id, audit.actor_name) == ("upload", project.pk, "bob")


def test_the_same_refusals_as_a_session_upload(project, alice, settings):
    with pytest.raises(FileRefused) as refused:
        project_file_upload(user=alice, project=project, uploaded=uploaded("tool.exe", b"MZ\x90\x00" + b"\0" * 200))
    assert refused.value.status == 415
    settings.APTIX_UPLOAD_MAX_BYTES = 10
    with pytest.raises(FileRefused) as refused:
        project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", csv_plain()))
    assert refused.value.status == 413
    assert not SessionFile.objects.exists()


def test_a_project_upload_counts_against_the_uploaders_quota(project, alice, settings):
    settings.APTIX_UPLOAD_USER_QUOTA = len(csv_plain()) + 10
    project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", csv_plain()))
    with pytest.raises(FileRefused) as refused:
        file_upload(owner=alice, uploaded=uploaded("again.csv", csv_plain()))
    assert refused.value.status == 413 and "quota" in refused.value.message


def test_non_members_and_other_teams_get_not_found(team_a, alice, bob, carol):
    board = project_create(team=team_a, user=alice, name="Board", members=["alice"])
    stored = project_file_upload(user=alice, project=board, uploaded=uploaded("sales.csv", csv_plain()))
    for outsider in (bob, carol):
        with pytest.raises(ProjectNotFoundError):
            project_file_upload(user=outsider, project=board, uploaded=uploaded("x.csv", csv_plain()))
        with pytest.raises(ProjectNotFoundError):
            project_file_list(user=outsider, project=board)
        with pytest.raises(ProjectNotFoundError):
            project_file_delete(user=outsider, project=board, file_id=stored.pk)
    assert SessionFile.objects.filter(deleted_at__isnull=True).count() == 1


def test_a_project_file_is_not_reached_as_its_uploaders_own_file(project, alice):
    """The uploader's session-file routes (download, delete, attach by id) do not reach a project's file:
    it is the members', through the project."""
    stored = project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", csv_plain()))
    session = session_create(team=project.team, user=alice)
    with pytest.raises(SessionFile.DoesNotExist):
        file_get(alice, stored.pk)
    with pytest.raises(SessionFile.DoesNotExist):
        file_delete(alice, stored.pk)
    with pytest.raises(SessionFile.DoesNotExist):
        files_attach(alice, [stored.pk], session)
    stored.refresh_from_db()
    assert stored.session_id is None and stored.deleted_at is None


def test_project_tables_are_named_apart_from_its_sessions_tables(project, alice, bob):
    session = session_create(team=project.team, user=bob, project=project)
    file_upload(owner=bob, uploaded=uploaded("sales.csv", csv_plain()), session=session)
    shared = project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", csv_plain()))
    assert shared.tables[0]["name"] == "sales_2"  # bob's session has "sales": the name answered is the one to query
    again = project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", csv_plain()))
    assert again.tables[0]["name"] == "sales_3"
    other = session_create(team=project.team, user=alice, project=project)
    own = file_upload(owner=alice, uploaded=uploaded("sales.csv", csv_plain()), session=other)
    assert own.tables[0]["name"] == "sales"  # the other session has no "sales" of its own; the project has sales_2, _3
    later = file_upload(owner=alice, uploaded=uploaded("sales_2.csv", csv_plain()), session=other)
    assert later.tables[0]["name"] == "sales_2_2"  # the project's sales_2 is taken in every session of it


def test_delete_removes_it_everywhere_and_is_audited(project, alice, bob):
    stored = project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", csv_plain()))
    project_file_delete(user=bob, project=project, file_id=stored.pk)  # any member may
    stored.refresh_from_db()
    assert stored.deleted_at is not None and not default_storage.exists(stored.storage_name)
    assert not default_storage.exists(stored.data_name)
    assert project_file_list(user=alice, project=project) == []
    with pytest.raises(SessionFile.DoesNotExist):
        project_file_get(user=alice, project=project, file_id=stored.pk)
    delete = FileAudit.objects.get(file_id=stored.pk, action="delete")
    assert (delete.project_id, delete.actor_name) == (project.pk, "bob")


def test_a_file_of_another_project_is_not_found_through_this_one(team_a, alice, project):
    other = project_create(team=team_a, user=alice, name="Other")
    stored = project_file_upload(user=alice, project=other, uploaded=uploaded("sales.csv", csv_plain()))
    with pytest.raises(SessionFile.DoesNotExist):
        project_file_delete(user=alice, project=project, file_id=stored.pk)
    with pytest.raises(SessionFile.DoesNotExist):
        project_file_get(user=alice, project=project, file_id="not-an-id")


def test_deleting_the_project_purges_its_files(project, alice):
    stored = project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", csv_plain()))
    project_id = project.pk
    project_delete(project=project, user=alice)
    stored.refresh_from_db()
    assert stored.deleted_at is not None and stored.project_id is None
    assert not default_storage.exists(stored.storage_name)
    assert FileAudit.objects.get(file_id=stored.pk, action="purge").project_id == project_id


def test_uploads_and_deletions_are_announced_after_commit(project, alice, django_capture_on_commit_callbacks):
    heard = []

    def added(sender, project, project_id, file, **kwargs):
        heard.append(("added", project_id, file.name, file.kind))

    def removed(sender, project, project_id, file, **kwargs):
        heard.append(("removed", project_id, file.name, file.kind))

    project_file_added.connect(added)
    project_file_removed.connect(removed)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            doc = project_file_upload(user=alice, project=project, uploaded=uploaded("memo.pdf", pdf_bytes(["Hi"])))
        assert heard == [("added", project.pk, "memo.pdf", "document")]
        with django_capture_on_commit_callbacks(execute=True):
            project_file_delete(user=alice, project=project, file_id=doc.pk)
        assert heard[-1] == ("removed", project.pk, "memo.pdf", "document")
    finally:
        project_file_added.disconnect(added)
        project_file_removed.disconnect(removed)


def test_nothing_is_announced_when_the_upload_rolls_back(project, alice, django_capture_on_commit_callbacks):
    heard = []
    project_file_added.connect(receiver := lambda **kwargs: heard.append(kwargs))
    try:
        with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():
            project_file_upload(user=alice, project=project, uploaded=uploaded("sales.csv", csv_plain()))
            raise RuntimeError("rolled back")
        assert heard == []
    finally:
        project_file_added.disconnect(receiver)
