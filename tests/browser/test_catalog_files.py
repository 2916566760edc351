"""The catalog's Import in a real browser: a curator uploads an edited export on the Agent modes list,
reads the diff in the preview and confirms; the preview has no axe violation. Screenshot in
var/test-artifacts/catalog-import-preview.png."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from modes.files.plan import export_files
from modes.models import AgentMode
from tests.helpers import async_db
from tests.helpers.mode_files import zip_of

from .axe import AXE_PAGE, violations
from .live import ARTIFACTS, expect

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


async def test_a_curator_previews_and_imports_an_edited_export(sign_in, curator, tmp_path):
    files = await sync_to_async(export_files)()
    files["general.mode.md"] = files["general.mode.md"].replace("order: 10\n", "order: 11\n")
    upload = tmp_path / "modes.zip"
    upload.write_bytes(zip_of(files))
    page = await sign_in(curator, **AXE_PAGE)
    await page.goto("/admin/modes/agentmode/")
    await page.get_by_role("link", name="Import").click()
    await page.locator("#import-files").set_input_files(str(upload))
    await page.get_by_role("button", name="Preview").click()

    preview = page.locator("#import-preview")
    await expect(preview).to_contain_text("0 new, 1 changed, 3 unchanged")
    await expect(preview.locator("tr.import-changed pre")).to_contain_text("+order: 11")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "catalog-import-preview.png"), full_page=True, caret="initial")
    assert await violations(page) == []
    assert (await AgentMode.objects.aget(key="general")).ordering == 10

    await page.get_by_role("checkbox", name="Publish the imported modes at once").check()
    await page.get_by_role("button", name="Import 1 mode").click()
    await expect(page.locator(".messagelist")).to_contain_text(
        "Imported 1 mode(s): general: changed, version 2 published."
    )
    assert (await AgentMode.objects.aget(key="general")).ordering == 11
