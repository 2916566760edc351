"""The project audit and the admin's read-only view of projects: creations, deletions and membership
changes are rows; auditors list projects, their files and the audit; nobody edits them there."""

from __future__ import annotations

import pytest

from files.models import FileAudit
from projects.files import project_file_delete, project_file_upload
from projects.models import ProjectAudit
from projects.services import project_create, project_delete, project_update
from tests.helpers.files import csv_plain, media, uploaded  # noqa: F401 - media: autouse fixture

pytestmark = pytest.mark.django_db


def rows():
    return [(a.action, a.actor_name, a.detail) for a in ProjectAudit.objects.order_by("id")]


def test_creation_membership_changes_and_deletion_are_audited(team_a, alice, bob):
    project = project_create(team=team_a, user=alice, name="Board", members=["bob"])
    assert rows() == [("created", "alice", ""), ("member_added", "alice", "alice"), ("member_added", "alice", "bob")]
    project_update(project=project, user=alice, members=["alice"])
    assert rows()[-1] == ("member_removed", "alice", "bob")
    project_update(project=project, user=alice, members=None)
    assert rows()[-2:] == [("member_removed", "alice", "alice"), ("member_added", "alice", "whole team")]
    project_update(project=project, user=alice, members=["bob"])
    assert rows()[-2:] == [("member_removed", "alice", "whole team"), ("member_added", "alice", "bob")]
    project_update(project=project, user=alice, description="unchanged members")  # no membership row
    assert len(rows()) == 8
    project_id = project.pk
    project_delete(project=project, user=alice)
    last = ProjectAudit.objects.order_by("id").last()
    assert (last.action, last.project_id, last.project_name) == ("deleted", project_id, "Board")


def test_a_whole_team_project_is_audited_as_the_whole_teams(team_a, alice):
    project_create(team=team_a, user=alice, name="Sales")
    assert rows() == [("created", "alice", "whole team")]


def test_auditors_list_projects_their_files_and_the_audit(client, auditor, team_a, alice, password):
    project = project_create(team=team_a, user=alice, name="Sales")
    kept = project_file_upload(user=alice, project=project, uploaded=uploaded("q3 export.csv", csv_plain()))
    gone = project_file_upload(user=alice, project=project, uploaded=uploaded("old.csv", csv_plain()))
    project_file_delete(user=alice, project=project, file_id=gone.pk)
    assert FileAudit.objects.filter(project_id=project.pk).count() == 3
    client.login(username=auditor.username, password=password)
    listed = client.get("/admin/projects/project/")
    assert listed.status_code == 200 and "Sales" in listed.content.decode()
    page = client.get(f"/admin/projects/project/{project.pk}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "q3 export.csv" in text and kept.sha256 in text and "old.csv" in text
    audit = client.get("/admin/projects/projectaudit/")
    assert audit.status_code == 200 and "created" in audit.content.decode()
    files_audit = client.get("/admin/files/fileaudit/")
    assert project.pk in files_audit.content.decode()


def test_nobody_edits_projects_or_the_audit_in_the_admin(admin_client, team_a, alice):
    project = project_create(team=team_a, user=alice, name="Sales")
    entry = ProjectAudit.objects.get()
    assert admin_client.get("/admin/projects/project/add/").status_code == 403
    assert admin_client.post(f"/admin/projects/project/{project.pk}/change/", {"name": "x"}).status_code == 403
    assert admin_client.get(f"/admin/projects/project/{project.pk}/delete/").status_code == 403
    assert admin_client.get(f"/admin/projects/projectaudit/{entry.pk}/delete/").status_code == 403
    project.refresh_from_db()
    assert project.name == "Sales"


def test_a_team_member_who_is_not_staff_sees_no_admin(client, bob, password):
    client.login(username=bob.username, password=password)
    assert client.get("/admin/projects/project/").status_code == 302  # to the admin's sign-in
