"""On PostgreSQL with pgvector (`make test` builds it: bin/install-pgvector), the passages' vectors are
also in pgvector's column and the database finds the nearest: the same passages, in the same order, as
the exact numpy search over the stored bytes. Installed after the migration, the start-up hook moves
the vectors in; a role that may not create the extension gets numpy and a warning naming what to do.
SQLite keeps numpy (its sqlite3 here cannot load sqlite-vec)."""

from __future__ import annotations

import itertools
import logging
import os

import numpy as np
import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.llm.catalog import reset_models_config
from files.knowledge import embeddings, search, vectors
from files.knowledge.embeddings import embed_missing
from files.models import Passage
from projects.services import project_create
from tests.helpers import inline_db
from tests.helpers.knowledge import POLICY_MD, concept_vector, models_file, project_document
from tests.helpers.scripted_model import ScriptedModel, loopback_server

pytestmark = inline_db


@pytest.fixture(autouse=True)
def pgvector():
    if connection.vendor != "postgresql":
        pytest.skip("pgvector is PostgreSQL's (make test runs these on it)")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        available = cursor.fetchone() is not None
    if not available:
        if os.environ.get("APTIX_REQUIRE_PGVECTOR") == "1":
            pytest.fail("APTIX_REQUIRE_PGVECTOR=1 but the PostgreSQL server has no pgvector (bin/install-pgvector)")
        pytest.skip("the PostgreSQL server has no pgvector; bin/install-pgvector builds it")
    vectors.forget()
    yield
    vectors.forget()  # a test's DDL is rolled back with its transaction


@pytest.fixture
def project(team_a, alice):
    return project_create(team=team_a, user=alice, name="Handbook")


@pytest.fixture
async def embedded(settings, tmp_path, alice, project):
    """The project's policy document, embedded by a scripted embedding model on loopback."""
    model = ScriptedModel()
    model.embedder = concept_vector
    async with loopback_server(model) as url:

        def embed() -> None:
            settings.APTIX_MODELS_CONFIG = models_file(tmp_path, url)
            reset_models_config()
            project_document(alice, project, "travel.md", POLICY_MD, now=True)
            embed_missing()

        try:
            await sync_to_async(embed)()
            yield
        finally:
            settings.APTIX_MODELS_CONFIG = str(tmp_path / "none.json")
            reset_models_config()


def _cosines():
    """The exact cosine of a stored passage vector and a query, in float64 (a near-tie may be ordered
    either way by float32 numpy and by pgvector)."""
    stored = {
        pk: np.frombuffer(bytes(blob), dtype=np.float32).astype(np.float64)
        for pk, blob in Passage.objects.values_list("id", "embedding")
    }

    def cosine(passage_id: str, query: list[float]) -> float:
        vector, wanted = stored[passage_id], np.asarray(query, dtype=np.float64)
        return float(vector @ wanted / (np.linalg.norm(vector) * np.linalg.norm(wanted)))

    return cosine


def _column_values() -> list[tuple[str, str | None]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, vector::text FROM files_passage ORDER BY id")
        return cursor.fetchall()


async def test_the_database_finds_the_nearest_passages_as_numpy_does(embedded, project):
    assert await sync_to_async(vectors.pgvector_on)()
    stored = await sync_to_async(_column_values)()
    assert len(stored) == 4 and all(value and value.startswith("[") for _id, value in stored)

    def searched(question: str):
        with CaptureQueriesContext(connection) as queries:
            found = search([project.pk], question, 3)
        return found, [q["sql"] for q in queries.captured_queries]

    found, sql = await sync_to_async(searched)("Where do I sleep overnight?")  # no word of the passage
    assert found.mode == "hybrid" and found.hits[0].title == "Hotels"
    assert any("<=>" in statement for statement in sql)  # ranked by pgvector, not by numpy

    embedder = embeddings.current_model()
    cosines = await sync_to_async(_cosines)()
    for question in ("Where do I sleep overnight?", "is dinner refunded", "which trains may I take"):
        query = concept_vector(question)
        in_database = await sync_to_async(vectors.nearest)([project.pk], embedder.key, query, 4)
        by_numpy = await sync_to_async(embeddings.numpy_nearest)([project.pk], query, 4, embedder)
        assert sorted(in_database) == sorted(by_numpy) and len(in_database) == 4
        exact = [cosines(passage_id, query) for passage_id in in_database]  # in float64
        assert all(a >= b - 1e-6 for a, b in itertools.pairwise(exact)), exact  # nearest first


async def test_pgvector_installed_later_takes_the_stored_vectors_at_start_up(embedded, project):

    def without_pgvector() -> None:  # as on a server whose pgvector came after the migration
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # (this test's rows: no DDL over pending checks)
            cursor.execute("DROP EXTENSION vector CASCADE")  # the column goes with it
        vectors.forget()

    await sync_to_async(without_pgvector)()
    assert not await sync_to_async(vectors.pgvector_on)()
    numpy_found = await sync_to_async(search)([project.pk], "Where do I sleep overnight?", 3)
    assert numpy_found.mode == "hybrid" and numpy_found.hits[0].title == "Hotels"

    assert await sync_to_async(vectors.pgvector_enable)() is True  # what the start-up hook calls
    stored = await sync_to_async(_column_values)()
    assert len(stored) == 4 and all(value for _id, value in stored)  # filled from the bytes
    found = await sync_to_async(search)([project.pk], "Where do I sleep overnight?", 3)
    assert found.hits[0].title == "Hotels"  # (near-ties below it may fall either way)
    assert {h.id for h in found.hits} == {h.id for h in numpy_found.hits}
    assert await sync_to_async(embed_missing)() == 0  # nothing to embed again


def test_a_role_that_may_not_create_the_extension_keeps_numpy_and_is_told_why(db, caplog):
    with connection.cursor() as cursor:
        cursor.execute("DROP EXTENSION vector CASCADE")
        cursor.execute("CREATE ROLE aptix_no_extensions")
        cursor.execute("GRANT ALL ON SCHEMA public TO aptix_no_extensions")
        cursor.execute("SET ROLE aptix_no_extensions")
    try:
        with caplog.at_level(logging.WARNING, logger="aptix.files.knowledge"):
            assert vectors.pgvector_enable() is False
        assert not vectors.pgvector_on()
        warning = next(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
        assert "could not be created (permission denied" in warning and "CREATE EXTENSION vector" in warning
        assert "\n" not in warning
        with connection.cursor() as cursor:  # the transaction is still usable after the refusal (a savepoint)
            cursor.execute("SELECT current_user")
            assert cursor.fetchone() == ("aptix_no_extensions",)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET ROLE")
