"""Knowledge search in a real browser: alice's project page shows its document indexed, and a citation
link of the document opens it scrolled to the passage, marked. Screenshot:
var/test-artifacts/knowledge-citation.png."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from files.knowledge import search
from projects.services import project_create
from tests.helpers import async_db
from tests.helpers.knowledge import POLICY_MD, indexed, project_document
from tools.builtin.knowledge_search import citation_link

from .live import ARTIFACTS, expect

pytestmark = [pytest.mark.asyncio(loop_scope="session"), async_db]


async def test_the_project_page_shows_the_index_and_a_citation_opens_its_passage(
    sign_in, alice, team_a, daphne_server, settings
):
    settings.MEDIA_ROOT = daphne_server.var_dir / "media"  # where the live server reads the documents
    project = await sync_to_async(project_create)(team=team_a, user=alice, name="Handbook")
    await sync_to_async(project_document)(alice, project, "travel.md", POLICY_MD)
    await sync_to_async(indexed)()
    page = await sign_in(alice)
    await page.goto(f"/projects/{project.pk}/")
    card = page.locator("#project-knowledge")
    await expect(card.get_by_role("heading", name="Knowledge search")).to_be_visible()
    await expect(card).to_contain_text("travel.md indexed, 4 passages")

    hit = (await sync_to_async(search)([project.pk], "meals refunded", 1)).hits[0]
    await page.goto(citation_link(hit))
    passage = page.locator(f"#passage-{hit.id}")
    await expect(passage).to_contain_text("45 euros a day")
    await expect(passage).to_be_in_viewport()
    assert await passage.evaluate("element => element.matches(':target')")
    await expect(page.get_by_role("heading", name="Section 3 — Meals")).to_be_visible()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "knowledge-citation.png"), full_page=True, caret="initial")
