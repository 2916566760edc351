"""Hybrid knowledge search: with a models.json entry `"embedding": true`, passages are embedded through
the OpenAI-compatible /v1/embeddings (a scripted server on loopback, faked at the protocol level) and
the nearest ones are fused with BM25 by reciprocal rank, so that a question sharing no word with the
passage that answers it finds it; with vectors of another model (the model changed) searches use
BM25 alone and say so until the passages are embedded again."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.llm.catalog import reset_models_config
from files.knowledge import search
from files.knowledge.embeddings import embed_missing
from files.models import KnowledgeIndex, Passage
from projects.services import project_create
from tests.helpers import inline_db
from tests.helpers.knowledge import POLICY_MD, concept_vector, models_file, project_document
from tests.helpers.scripted_model import ScriptedModel, loopback_server

pytestmark = inline_db


@pytest.fixture
def project(team_a, alice):
    return project_create(team=team_a, user=alice, name="Handbook")


async def test_a_semantic_match_wins_with_embeddings_and_bm25_alone_misses_it(settings, tmp_path, alice, project):
    model = ScriptedModel()
    model.embedder = concept_vector
    question = "Where do I sleep overnight?"  # no word of the hotels passage
    async with loopback_server(model) as url:
        bm25_only = await sync_to_async(project_document)(alice, project, "travel.md", POLICY_MD, now=True)
        assert (await sync_to_async(search)([project.pk], question, 3)).hits == []

        settings.APTIX_MODELS_CONFIG = models_file(tmp_path, url)
        reset_models_config()
        try:
            waiting = await sync_to_async(search)([project.pk], question, 3)  # no vectors yet: BM25, said so
            assert waiting.mode == "bm25" and "BM25 alone" in waiting.note
            assert await sync_to_async(embed_missing)() == 4
            found = await sync_to_async(search)([project.pk], question, 3)
            assert found.mode == "hybrid" and found.note == ""
            assert (found.hits[0].file_id, found.hits[0].title) == (bm25_only.pk, "Hotels")
            meals = await sync_to_async(search)([project.pk], "is dinner refunded", 1)  # both rankings agree
            assert meals.hits[0].title == "Meals"
            assert model.embedding_requests[0]["model"] == "fake-embedding"
            assert len(model.embedding_requests[0]["input"]) == 4  # the passages, in one request

            settings.APTIX_MODELS_CONFIG = models_file(tmp_path, url, embedding_key="embedder-2")
            reset_models_config()  # another model: its vectors are to be made again
            changed = await sync_to_async(search)([project.pk], question, 3)
            assert changed.mode == "bm25" and changed.hits == []
            assert await sync_to_async(embed_missing)() == 4
            again = await sync_to_async(search)([project.pk], question, 3)
            assert again.mode == "hybrid" and again.hits[0].title == "Hotels"
            models = await sync_to_async(lambda: set(Passage.objects.values_list("embedding_model", flat=True)))()
            assert models == {"embedder-2"}
        finally:
            settings.APTIX_MODELS_CONFIG = str(tmp_path / "none.json")
            reset_models_config()


async def test_an_embedding_server_that_fails_leaves_the_document_searchable_with_bm25(
    settings, tmp_path, alice, project
):
    model = ScriptedModel()  # no embedder: /v1/embeddings answers 500
    async with loopback_server(model) as url:
        settings.APTIX_MODELS_CONFIG = models_file(tmp_path, url)
        reset_models_config()
        try:
            stored = await sync_to_async(project_document)(alice, project, "travel.md", POLICY_MD, now=True)
            state = await sync_to_async(lambda: KnowledgeIndex.objects.get(file_id=stored.pk).state)()
            assert state == "indexed" and model.embedding_requests
            found = await sync_to_async(search)([project.pk], "hotel limit", 1)
            assert found.mode == "bm25" and "BM25 alone" in found.note and found.hits[0].title == "Hotels"
        finally:
            settings.APTIX_MODELS_CONFIG = str(tmp_path / "none.json")
            reset_models_config()
