"""The catalog admin's Export and Import as personas: a curator exports a zip, uploads an edited one,
reads the preview and confirms; an auditor (who may only read the catalog) can do neither; an upload
that tries to leave its folder or to unpack into too much is refused and imports nothing."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from modes.files.admin_views import ERROR_ADD_PERMISSION, ERROR_CHANGED_SINCE_PREVIEW
from modes.files.plan import export_files
from modes.files.sources import MAX_ZIP_ENTRIES
from modes.models import AgentMode, ModeVersion
from tests.helpers.mode_files import catalog_snapshot, zip_of

pytestmark = pytest.mark.django_db

EXPORT = reverse("admin:modes_agentmode_export")
IMPORT = reverse("admin:modes_agentmode_import")
CHANGELIST = reverse("admin:modes_agentmode_changelist")


@pytest.fixture
def signed_in(client, curator, password):
    client.login(username=curator.username, password=password)
    return client


def upload(client, *files: tuple[str, bytes]):
    return client.post(IMPORT, {"files": [SimpleUploadedFile(name, data) for name, data in files]})


def confirm(client, preview, **changes):
    data = {
        "confirm": "1",
        "file_name": [name for name, _ in preview.context["confirm_files"]],
        "file_text": [text for _, text in preview.context["confirm_files"]],
        "digest": preview.context["plan"].digest(),
        **changes,
    }
    return client.post(IMPORT, data)


def edited_export() -> dict[str, str]:
    files = export_files()
    files["general.mode.md"] = files["general.mode.md"].replace("order: 10\n", "order: 11\n")
    return files


def test_the_changelist_offers_export_and_import_to_a_curator_only(signed_in, client, auditor, password):
    page = signed_in.get(CHANGELIST).content.decode()
    assert f'href="{EXPORT}"' in page and f'href="{IMPORT}"' in page
    client.logout()
    client.login(username=auditor.username, password=password)
    page = client.get(CHANGELIST).content.decode()
    assert client.get(CHANGELIST).status_code == 200 and EXPORT not in page and IMPORT not in page


def test_export_is_a_zip_of_every_modes_file(signed_in):
    AgentMode.objects.filter(key="workflow-authoring").update(is_active=False)
    response = signed_in.get(EXPORT)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert re.match(r'attachment; filename="aptix-modes-\d{8}-\d{6}\.zip"', response["Content-Disposition"])
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        files = {name: archive.read(name).decode() for name in archive.namelist()}
    assert files == export_files() and "workflow-authoring.mode.md" in files


def test_an_uploaded_zip_is_previewed_then_imported_on_confirmation(signed_in):
    before = catalog_snapshot()
    preview = upload(signed_in, ("modes.zip", zip_of(edited_export())))

    assert preview.status_code == 200
    page = preview.content.decode()
    assert "0 new, 1 changed, 3 unchanged" in page
    assert "-order: 10" in page and "+order: 11" in page
    assert 'id="import-confirm"' in page
    assert 'style="' not in page  # the admin's Content-Security-Policy refuses inline styles
    assert catalog_snapshot() == before  # the preview writes nothing

    response = confirm(signed_in, preview)

    assert response.status_code == 302 and response["Location"] == CHANGELIST
    assert catalog_snapshot() == before  # a draft: nothing live changes until it is published
    assert ModeVersion.objects.get(mode__key="general", state=ModeVersion.State.DRAFT).snapshot["ordering"] == 11
    messages = [str(m) for m in signed_in.get(CHANGELIST).context["messages"]]
    assert "Imported 1 mode(s): general: changed, version 2 draft." in messages


def test_publish_at_once_makes_the_upload_live(signed_in):
    before = catalog_snapshot()
    preview = upload(signed_in, ("modes.zip", zip_of(edited_export())))

    assert confirm(signed_in, preview, publish="on").status_code == 302

    assert AgentMode.objects.get(key="general").ordering == 11
    after = catalog_snapshot()
    assert after.pop("general")["version"] == 2
    before.pop("general")
    assert after == before
    messages = [str(m) for m in signed_in.get(CHANGELIST).context["messages"]]
    assert "Imported 1 mode(s): general: changed, version 2 published." in messages


def test_several_md_files_are_uploaded_together(signed_in):
    subagent = (
        b"---\nname: code-reviewer\ndescription: Reviews code.\ntools: Read, mcp__github__get_issue\n---\nReview.\n"
    )
    mode = b"---\nkey: triage\nname: Triage\ndescription: Sorts incoming requests.\n---\nSort them.\n"
    preview = upload(signed_in, ("triage.mode.md", mode), ("code-reviewer.md", subagent))
    page = preview.content.decode()
    assert "2 new, 0 changed, 0 unchanged" in page
    assert "code-reviewer.md: not mapped: tools Read: Claude Code tools with no Aptix equivalent" in page

    assert confirm(signed_in, preview).status_code == 302
    assert AgentMode.objects.get(key="code-reviewer").tool_policy == ["github.get_issue"]
    assert AgentMode.objects.get(key="triage").system_prompt == "Sort them."


def test_a_bad_file_is_shown_with_file_line_and_field_and_nothing_can_be_imported(signed_in):
    files = edited_export()
    files["ddr-authoring.mode.md"] = files["ddr-authoring.mode.md"].replace("order: 20\n", "order: soon\n")
    line = files["ddr-authoring.mode.md"].splitlines().index("order: soon") + 1
    preview = upload(signed_in, ("modes.zip", zip_of(files)))
    assert preview.status_code == 400
    page = preview.content.decode()
    assert f"ddr-authoring.mode.md:{line}: order: expected a whole number, 0 or more" in page
    assert 'id="import-confirm"' not in page
    assert AgentMode.objects.get(key="general").ordering == 10


def test_a_confirmation_that_no_longer_matches_its_preview_imports_nothing(signed_in):
    preview = upload(signed_in, ("modes.zip", zip_of(edited_export())))
    AgentMode.objects.filter(key="general").update(ordering=12)  # someone else edits in between

    response = confirm(signed_in, preview)

    assert response.status_code == 200 and ERROR_CHANGED_SINCE_PREVIEW in response.content.decode()
    assert AgentMode.objects.get(key="general").ordering == 12
    tampered = confirm(signed_in, preview, digest="0" * 64)
    assert ERROR_CHANGED_SINCE_PREVIEW in tampered.content.decode()


def test_a_zip_entry_that_leaves_the_archive_is_refused(signed_in):
    files = {**edited_export(), "../evil.mode.md": "---\nkey: evil\nname: Evil\ndescription: Escapes\n---\n"}
    preview = upload(signed_in, ("modes.zip", zip_of(files)))
    assert preview.status_code == 400
    page = preview.content.decode()
    assert "../evil.mode.md: a path that leaves the archive (or a link): refused" in page
    assert 'id="import-confirm"' not in page
    assert not AgentMode.objects.filter(key="evil").exists()
    absolute = upload(signed_in, ("modes.zip", zip_of({"/etc/evil.mode.md": "---\nkey: evil\n---\n"})))
    assert "/etc/evil.mode.md: a path that leaves the archive" in absolute.content.decode()


def test_a_zip_that_unpacks_past_the_upload_limit_is_refused(signed_in, settings):
    settings.APTIX_UPLOAD_MAX_BYTES = 20_000
    bomb = "---\nkey: bomb\nname: Bomb\ndescription: Big\n---\n\n" + "a" * 200_000 + "\n"
    data = zip_of({"bomb.mode.md": bomb})
    assert len(data) < 2_000  # small to upload, large unpacked
    page = upload(signed_in, ("bomb.zip", data)).content.decode()
    assert "bomb.zip: unpacks to more than the upload limit" in page
    assert not AgentMode.objects.filter(key="bomb").exists()


def test_a_zip_with_too_many_entries_is_refused(signed_in):
    many = zip_of({f"m{n}.txt": "" for n in range(MAX_ZIP_ENTRIES + 1)})
    page = upload(signed_in, ("many.zip", many)).content.decode()
    assert f"many.zip: more than {MAX_ZIP_ENTRIES} entries: refused" in page


def test_an_upload_past_the_upload_limit_is_stopped_and_the_page_names_the_limit(signed_in, settings):
    settings.APTIX_UPLOAD_MAX_BYTES = 1000
    response = upload(signed_in, ("modes.zip", zip_of(edited_export())))
    assert "Choose a .zip or one or more .md files (each at most 1000 bytes)." in response.content.decode()
    assert AgentMode.objects.get(key="general").ordering == 10


def test_an_upload_that_is_not_a_zip_or_nothing_at_all_says_so(signed_in):
    page = upload(signed_in, ("modes.zip", b"not a zip")).content.decode()
    assert "modes.zip: not a zip file" in page
    page = signed_in.post(IMPORT, {}).content.decode()
    assert "Choose a .zip or one or more .md files" in page


def test_an_auditor_can_neither_export_nor_import(client, auditor, password):
    client.login(username=auditor.username, password=password)
    assert client.get(EXPORT).status_code == 403
    assert client.get(IMPORT).status_code == 403
    response = client.post(IMPORT, {"files": [SimpleUploadedFile("m.zip", zip_of(edited_export()))]})
    assert response.status_code == 403
    assert AgentMode.objects.get(key="general").ordering == 10


def test_a_member_who_is_not_staff_is_sent_to_the_admin_login(client, alice, password):
    client.login(username=alice.username, password=password)
    for url in (EXPORT, IMPORT):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_importing_a_new_mode_needs_the_permission_to_add_modes(client, django_user_model, password):
    editor = django_user_model.objects.create_user(username="eddie", password=password, is_staff=True)
    editor.user_permissions.add(Permission.objects.get(codename="change_agentmode"))
    client.login(username=editor.username, password=password)
    mode = b"---\nkey: triage\nname: Triage\ndescription: Sorts incoming requests.\n---\n"
    preview = upload(client, ("triage.mode.md", mode))
    response = confirm(client, preview)
    assert ERROR_ADD_PERMISSION in response.content.decode()
    assert not AgentMode.objects.filter(key="triage").exists()
