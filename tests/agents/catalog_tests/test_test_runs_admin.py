"""The catalog tests' admin pages: a curator starts a run from the form (it runs in the background
of the serving process), watches its page reload until it is done, reads the accuracy, each mode's
precision and recall, the confusion matrix and every case, and deletes it; staff without the catalog
permissions see none of it."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient, override_settings

from agents.catalog_tests.execute import test_runs_wait as runs_wait
from agents.models import CatalogTestRun
from agents.run.runners import LocalRunner
from agents.runner import use_runner
from aptix.models import Membership
from modes.models import AgentMode
from modes.proposal import proposal_text
from tests.helpers import inline_db

pytestmark = inline_db
RUNS = "/admin/agents/catalogtestrun/"


@pytest.fixture
def member_curator(curator, team_a):
    Membership.objects.create(team=team_a, user=curator, role=Membership.Role.MEMBER)
    AgentMode.objects.update(example_utterances=[], test_utterances=[])
    AgentMode.objects.filter(key="general").update(example_utterances=["Hello there"])
    AgentMode.objects.filter(key="data-analysis").update(example_utterances=["Chart revenue by month"])
    return curator


async def test_a_curator_runs_the_tests_from_the_admin_and_reads_the_results(member_curator, model, llm):
    model.reply(proposal_text("Data Analysis", "data-analysis"))  # Hello there → data-analysis (wrong)
    model.reply(proposal_text("Data Analysis", "data-analysis"))  # Chart → data-analysis (right)
    client = AsyncClient()
    await client.aforce_login(member_curator)
    page = await client.get(f"{RUNS}add/")
    assert page.status_code == 200 and b"Run the tests" in page.content
    with override_settings(APTIX_CATALOG_TEST_CONCURRENCY=1), use_runner(LocalRunner()):
        started = await client.post(f"{RUNS}add/", {"catalog": "published", "kind": "routing", "model": ""})
        assert started.status_code == 302
        run = await CatalogTestRun.objects.aget()
        assert started["Location"] == f"{RUNS}{run.pk}/change/"
        await runs_wait()  # the serving loop took it at once
    page = await client.get(started["Location"])
    text = page.content.decode()
    assert page.status_code == 200 and 'data-status="done"' in text and 'http-equiv="refresh"' not in text
    assert "Accuracy: <strong>50%</strong> of 2 cases." in text
    matrix = re.search(r'<table id="run-matrix".*?</table>', text, re.S).group(0)
    headers = re.findall(r'<th scope="col">([^<]+)</th>', matrix)
    assert headers == ["expected ↓ / got →", "stay", "data-analysis"]
    cells = re.findall(r'<td class="([^"]*)">(\d*)</td>', matrix)
    assert cells == [("", ""), ("cell-wrong", "1"), ("", ""), ("cell-right", "1")]  # stay row, data-analysis row
    assert "Hello there" in text and "Chart revenue by month" in text
    listing = await client.get(RUNS)
    assert listing.status_code == 200 and "50%" in listing.content.decode()
    deleted = await client.post(f"{RUNS}{run.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302 and not await CatalogTestRun.objects.aexists()


async def test_a_running_runs_page_reloads_itself_and_offers_stop(member_curator):
    run = await CatalogTestRun.objects.acreate(
        team_id=await sync_to_async(lambda: Membership.objects.get(user=member_curator).team_id)(),
        started_by=member_curator,
        total=4,
        done=1,
    )
    client = AsyncClient()
    await client.aforce_login(member_curator)
    text = (await client.get(f"{RUNS}{run.pk}/change/")).content.decode()
    assert '<meta http-equiv="refresh" content="2">' in text and 'id="run-stop"' in text
    assert '<progress id="run-progress" max="4" value="1">' in text
    stopped = await client.post(f"{RUNS}{run.pk}/stop/")
    assert stopped.status_code == 302
    await run.arefresh_from_db()
    assert run.status == "stopped"  # a queued run stops at once


async def test_staff_without_the_catalog_permissions_see_no_runs(django_user_model, password, member_curator):
    staff = await sync_to_async(django_user_model.objects.create_user)("sam", password=password, is_staff=True)
    run = await CatalogTestRun.objects.acreate(
        team_id=await sync_to_async(lambda: Membership.objects.get(user=member_curator).team_id)(),
        started_by=member_curator,
    )
    client = AsyncClient()
    await client.aforce_login(staff)
    for url in (RUNS, f"{RUNS}add/", f"{RUNS}{run.pk}/change/"):
        assert (await client.get(url)).status_code == 403, url
    assert (await client.post(f"{RUNS}{run.pk}/stop/")).status_code == 403
    await run.arefresh_from_db()
    assert not run.stop_requested
