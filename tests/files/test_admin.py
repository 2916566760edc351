"""The file audit in the admin: auditors read it; nobody, superusers included, adds, changes or
deletes an entry."""

from __future__ import annotations

import pytest

from files.models import FileAudit
from files.services import file_delete, file_upload
from tests.helpers.files import csv_plain, uploaded

pytestmark = pytest.mark.django_db
LIST = "/admin/files/fileaudit/"


def test_auditors_read_the_file_audit(client, auditor, alice, password):
    upload = file_upload(owner=alice, uploaded=uploaded("q3 export.csv", csv_plain()))
    file_delete(alice, upload.pk)
    assert auditor.has_perm("files.view_fileaudit")
    client.login(username=auditor.username, password=password)
    page = client.get(LIST)
    assert page.status_code == 200
    text = page.content.decode()
    assert text.count("q3 export.csv") == 2 and upload.sha256 in text and "alice" in text


def test_nobody_adds_changes_or_deletes_audit_entries(admin_client, alice):
    upload = file_upload(owner=alice, uploaded=uploaded("a.csv", csv_plain()))
    entry = FileAudit.objects.get(file_id=upload.pk)
    assert admin_client.get(LIST + "add/").status_code == 403
    assert admin_client.get(f"{LIST}{entry.pk}/delete/").status_code == 403
    assert admin_client.post(f"{LIST}{entry.pk}/change/", {"name": "changed"}).status_code == 403
    assert FileAudit.objects.get(pk=entry.pk).name == "a.csv"
