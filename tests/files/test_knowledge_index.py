"""Knowledge search's index (files/knowledge/): a project's documents split into passages by page and
heading, indexed in the background with their progress, ranked with BM25 over the project alone, and
forgotten with their file."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from django.db import connection

from files.knowledge import forget_file, index_file, index_progress, search, sweep_pending
from files.knowledge.ranking import rrf, wait_built
from files.models import KnowledgeIndex, Passage
from projects.services import project_create
from tests.helpers import async_db
from tests.helpers.files import pdf_bytes
from tests.helpers.knowledge import POLICY_MD, SECURITY_MD, indexed, project_document

pytestmark = async_db  # committed: the indexer's thread reads what the test wrote
DEMO_DATA = Path(__file__).resolve().parents[2] / "aptix" / "demo_data"


@pytest.fixture
def project(team_a, alice):
    return project_create(team=team_a, user=alice, name="Handbook")


def test_a_document_is_split_by_heading_and_indexed_in_the_background(alice, project):
    stored = project_document(alice, project, "travel.md", POLICY_MD)
    indexed()
    state = KnowledgeIndex.objects.get(file=stored)
    assert (state.state, state.passages_done, state.passages_total) == ("indexed", 4, 4)
    passages = list(Passage.objects.filter(file=stored).order_by("ordinal"))
    assert [p.title for p in passages] == ["Travel policy", "Hotels", "Meals", "Trains and flights"]
    assert [p.page for p in passages] == [1, 2, 3, 4]
    assert all(p.project_id == project.pk and len(p.pk) == 32 for p in passages)
    assert index_progress(project.pk) == [
        {"file_id": stored.pk, "name": "travel.md", "state": "indexed", "done": 4, "total": 4, "error": ""}
    ]


def test_a_pdfs_passages_keep_their_page(alice, project):
    stored = project_document(
        alice, project, "rules.pdf", pdf_bytes(["Opening hours are nine to five.", "Parking is free for visitors."])
    )
    indexed()
    found = search([project.pk], "where do visitors park", 3)
    assert found.mode == "bm25"
    assert [(h.file_name, h.page, h.unit) for h in found.hits][:1] == [("rules.pdf", 2, "page")]
    assert found.hits[0].file_id == stored.pk


def test_bm25_ranks_the_matching_passage_first_within_the_project_only(team_a, alice, project):
    project_document(alice, project, "travel.md", POLICY_MD)
    other = project_create(team=team_a, user=alice, name="Security")
    project_document(alice, other, "security.md", SECURITY_MD)
    indexed()
    found = search([project.pk], "hotel nightly limit in capitals", 5)
    assert found.hits[0].title == "Hotels" and "180 euros" in found.hits[0].text
    assert found.hits[0].score > 0
    assert all(h.file_name == "travel.md" for h in found.hits)
    assert search([project.pk], "laptop encrypted passwords", 5).hits == []  # the other project's words
    assert search([other.pk], "laptop", 5).hits[0].title == "Laptops"
    assert search([], "hotel", 5).hits == []


def test_the_index_follows_new_and_forgotten_documents(alice, project):
    travel = project_document(alice, project, "travel.md", POLICY_MD)
    indexed()
    assert search([project.pk], "laptop", 5).hits == []
    security = project_document(alice, project, "security.md", SECURITY_MD)
    indexed()
    search([project.pk], "laptop", 5)  # bm25s: the index at hand serves while the new one is built
    wait_built(project.pk)
    assert search([project.pk], "laptop", 5).hits[0].file_id == security.pk
    forget_file(security)
    assert search([project.pk], "laptop", 5).hits == []
    assert not Passage.objects.filter(file=security).exists()
    assert search([project.pk], "meals", 5).hits[0].file_id == travel.pk


def test_a_session_file_or_a_table_is_not_indexed(alice, project):
    from tests.helpers.files import csv_plain

    table = project_document(alice, project, "sales.csv", csv_plain())
    assert KnowledgeIndex.objects.filter(file=table).count() == 0
    loose = project_document(alice, project, "loose.md", POLICY_MD, index=False)
    loose.project = None
    assert index_file(loose) is False


def test_the_start_up_sweep_takes_up_documents_left_pending(alice, project):
    stored = project_document(alice, project, "travel.md", POLICY_MD, index=False)
    KnowledgeIndex.objects.create(file=stored, project=project, state=KnowledgeIndex.State.INDEXING)
    assert sweep_pending() == 1
    indexed()
    assert KnowledgeIndex.objects.get(file=stored).state == "indexed"
    assert search([project.pk], "meals refunded", 1).hits[0].title == "Meals"


def test_a_document_that_cannot_be_read_fails_with_its_reason(alice, project):
    stored = project_document(alice, project, "travel.md", POLICY_MD, index=False)
    stored.__class__.objects.filter(pk=stored.pk).update(data_name="missing/pages.json")
    stored.refresh_from_db()
    index_file(stored)
    indexed()
    state = KnowledgeIndex.objects.get(file=stored)
    assert state.state == "failed" and state.error


def test_reciprocal_rank_fusion_adds_each_rankings_share():
    fused = rrf(["a", "b", "c"], ["c", "a"])
    assert [pid for pid, _ in fused] == ["a", "c", "b"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1][1] == pytest.approx(1 / 63 + 1 / 61)


@pytest.mark.parametrize("ranking", ["bm25s", "postgres"])
def test_the_ranking_is_bm25s_or_on_postgresql_its_full_text_search(settings, alice, project, ranking):
    from files.knowledge import ranking as rankings

    settings.APTIX_KNOWLEDGE_RANKING = ranking
    project_document(alice, project, "travel.md", POLICY_MD)
    indexed()
    found = search([project.pk], "Which hotels need receipts?", 2)  # plurals folded either way
    assert found.hits[0].title == "Hotels" and found.hits[0].score > 0
    full_text = ranking == "postgres" and connection.vendor == "postgresql"
    assert (project.pk in rankings._cache) is not full_text  # PostgreSQL's holds nothing in the process


def test_a_document_indexed_again_changes_the_projects_version(alice, project):
    from files.knowledge.indexing import index_now
    from files.knowledge.ranking import project_version

    stored = project_document(alice, project, "travel.md", POLICY_MD)
    indexed()
    before = project_version(project.pk)
    assert before[0] == 1
    index_now(stored.pk)  # its passages made again: their ids are new, the cached index must go
    assert project_version(project.pk) != before


def test_a_document_uploaded_to_a_project_is_searchable_and_its_deletion_forgets_it(alice, project):
    """The project's upload and deletion (projects/files.py) reach the index through projects/signals.py."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from projects.files import project_file_delete, project_file_upload

    stored = project_file_upload(
        user=alice, project=project, uploaded=SimpleUploadedFile("travel.md", POLICY_MD.encode())
    )
    indexed()
    assert KnowledgeIndex.objects.get(file=stored).state == "indexed"
    assert "180 euros" in search([project.pk], "hotel nightly limit", 1).hits[0].text

    project_file_delete(user=alice, project=project, file_id=stored.pk)
    assert not Passage.objects.filter(file=stored).exists() and not KnowledgeIndex.objects.filter(file=stored).exists()
    assert search([project.pk], "hotel nightly limit", 1).hits == []


def test_words_of_a_documents_name_weigh_alike_on_all_its_passages(alice, project):
    """ "travel policy hotels" names the document and asks about hotels: the page about hotels comes
    first, not the opening one that repeats the title (it did before the name's words were indexed)."""
    text = (
        "# Travel policy\n\nThis travel policy says how we book business travel through the travel desk.\n\n"
        "# Budgets\n\nHotels: up to 180 euros a night in capital cities.\n\n"
        "# Approval\n\nYour manager approves trips before you book.\n"
    )
    project_document(alice, project, "travel_policy.md", text)
    indexed()
    assert search([project.pk], "travel policy hotels", 3).hits[0].title == "Budgets"


@pytest.mark.parametrize("ranking", ["bm25s", "postgres"])
def test_a_question_naming_a_document_prefers_its_passages(settings, alice, project, ranking):
    """BM25 favours short passages: a one-line mention of a hotel in the remote-work policy outranked
    the sample travel policy's budget page for "travel policy hotels" (seen with three policies in a
    project). A query word in a document's name (and in few other names) now lifts that document's
    passages; a word every name has ("policy") weighs nothing, and a query naming no document ranks
    as before."""
    settings.APTIX_KNOWLEDGE_RANKING = ranking
    project_document(alice, project, "travel_policy.pdf", (DEMO_DATA / "travel_policy.pdf").read_bytes())
    remote = ["Remote work policy. Employees may work remotely up to three days a week.", "A hotel needs the VPN."]
    project_document(alice, project, "remote_work_policy.pdf", pdf_bytes(remote))
    project_document(alice, project, "it_security_policy.pdf", pdf_bytes(["Passwords have at least 14 characters."]))
    indexed()
    best = search([project.pk], "travel policy hotels", 3).hits[0]
    assert (best.file_name, best.page) == ("travel_policy.pdf", 2)
    best = search([project.pk], "hotel", 3).hits[0]  # no document named: BM25's order, the short passage first
    assert (best.file_name, best.page) == ("remote_work_policy.pdf", 2)


def test_a_long_sections_passages_overlap_by_whole_lines(alice, project):
    """A passage after the first on a page starts with the last lines of the one before (at most
    200 characters of them), so what a cut splits is found whole in one passage."""
    lines = [f"Rule {n}: expenses of type {n} are refunded within {n + 10} days of the claim." for n in range(30)]
    project_document(alice, project, "rules.md", "# Expense rules\n\n" + "\n".join(lines) + "\n")
    indexed()
    texts = [p.text for p in Passage.objects.filter(project=project).order_by("ordinal")]
    assert len(texts) >= 3
    for before, after in itertools.pairwise(texts):
        first, second = before.splitlines(), after.splitlines()
        carried = max(k for k in range(len(second)) if first[len(first) - k :] == second[:k])  # 0 always fits
        assert carried >= 1 and len("\n".join(second[:carried])) <= 200, (first[-3:], second[:3])
    assert sorted({line for text in texts for line in text.splitlines() if line.startswith("Rule")}) == sorted(lines)
