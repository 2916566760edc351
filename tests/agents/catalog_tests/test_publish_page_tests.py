"""A draft that breaks routing shows the drop on its publish page before anyone publishes it: a
comparison run (the published catalog, then the catalog with the drafts, the offline model) records
the drafts it applied, and the draft's review/publish page and its row in the versions list show the
last comparison with a warning; the run's own page lists what changed."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.catalog_tests.execute import test_run_execute as run_execute
from agents.catalog_tests.runs import test_run_create as run_create
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from aptix.models import Membership
from modes.models import AgentMode
from modes.versions import draft_save
from tests.helpers import inline_db

pytestmark = inline_db


@pytest.fixture
def member_curator(curator, team_a):
    Membership.objects.create(team=team_a, user=curator, role=Membership.Role.MEMBER)
    return curator


async def test_a_draft_that_empties_data_analysis_shows_the_drop_on_its_publish_page(member_curator):
    draft = await sync_to_async(draft_save)(
        mode="data-analysis", fields={"description": "TBD.", "example_utterances": []}, author=member_curator
    )
    run = await sync_to_async(run_create)(user=member_curator, catalog="compare", kind="routing")
    assert run.versions["drafts"] == {"data-analysis": draft.number}
    with use_runner(LocalRunner()):
        await run_execute(run.pk)
    await run.arefresh_from_db()
    assert run.status == "done" and run.accuracy == 0.7297  # 27 of 37 with the draft (0.8605 published)

    mode = await AgentMode.objects.aget(key="data-analysis")
    client = AsyncClient()
    await client.aforce_login(member_curator)
    review = (await client.get(f"/admin/modes/agentmode/{mode.pk}/versions/{draft.number}/review/")).content.decode()
    assert "Warning: the drafts lower routing accuracy from 0.86 to 0.73." in review
    summary = "routing accuracy <strong>0.86</strong> published, <strong>0.73</strong> with the drafts"
    assert f"{summary}; 10 cases route differently" in review
    assert f'href="/admin/agents/catalogtestrun/{run.pk}/change/"' in review
    assert re.search(r'<button[^>]*name="publish-version">Publish version \d+ anyway</button>', review)

    listing = (await client.get(f"/admin/modes/agentmode/{mode.pk}/change/")).content.decode()
    row = re.search(rf'<tr class="mode-version" data-version="{draft.number}".*?</tr>', listing, re.S).group(0)
    assert "Tests: routing 0.86 → 0.73" in row

    page = (await client.get(f"/admin/agents/catalogtestrun/{run.pk}/change/")).content.decode()
    assert 'id="accuracy-dropped"' in page
    assert "published catalog <strong>86%</strong>, with the drafts <strong>73%</strong>" in page
    changed = re.search(r'<table id="changed-cases".*?</table>', page, re.S).group(0)
    assert changed.count("<tr>") == 1 + 10  # the header and the ten cases that route differently
    assert "How many orders did we get last month?" in changed

    # A newer draft has no comparison yet: the page says so, and offers one.
    newer = await sync_to_async(draft_save)(
        mode="data-analysis", fields={"description": "Data questions."}, author=member_curator
    )
    review = (await client.get(f"/admin/modes/agentmode/{mode.pk}/versions/{newer.number}/review/")).content.decode()
    assert "No comparison of the catalog with this draft has run yet." in review and 'id="compare-drafts"' in review
    assert "Warning" not in review
