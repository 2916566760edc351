"""Benchmark: knowledge search over a large project (files/knowledge/).

1,000 documents of 100 sections each (100,000 passages of ~60 words drawn from a 5,000-word vocabulary
with a Zipf-like law, so that words are common and rare as in prose) are stored as ingestion leaves a
document (its pages as JSON) and made a project's. Then:

1. indexing: each document split into passages and written (files/knowledge/indexing.py `index_now`,
   the background thread's work, run here in the foreground): passages per second;
2. the first search, which on SQLite builds the project's BM25 index in this process (its cold start),
   and the web process's RSS growth with that index;
3. `knowledge_search` p50/p95 over 200 queries of 2-6 words (through the tool, as a turn calls it);
4. one more document: the next search's time, and (SQLite) how long its index takes to be rebuilt.

Targets (issue): indexing ≥ 200 passages/s, search p95 ≤ 150 ms, RSS growth ≤ 200 MB.

    .venv/bin/python bench/knowledge.py [--documents 1000] [--sections 100] [--queries 200]
    DEBUG=false bin/with-postgres .venv/bin/python bench/knowledge.py   (PostgreSQL)
(SQLite in a temp dir when DATABASE_URL is unset.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django()

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from aptix.teams import team_ensure
from files import storage
from files.knowledge.indexing import index_now
from files.knowledge.ranking import wait_built
from files.models import KnowledgeIndex, SessionFile
from projects.services import project_create
from tools.base import ToolContext
from tools.builtin.knowledge_search import KnowledgeSearchTool

VOCABULARY = 5_000
WORDS_PER_SECTION = 60


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(VOCABULARY * 2)})
    words = words[:VOCABULARY]
    rng.shuffle(words)
    return words, [1.0 / (rank + 1) for rank in range(len(words))]


def make_documents(owner, project, count: int, sections: int, rng: random.Random) -> list[str]:
    words, weights = vocabulary(rng)
    workdir = Path(tempfile.mkdtemp(prefix="aptix-bench-knowledge-"))
    ids = []
    for number in range(count):
        pages = [
            {
                "page": page,
                "title": " ".join(rng.choices(words, weights, k=3)).capitalize(),
                "text": " ".join(rng.choices(words, weights, k=WORDS_PER_SECTION)),
            }
            for page in range(1, sections + 1)
        ]
        path = workdir / "pages.json"
        path.write_text(json.dumps(pages))
        upload = SessionFile(
            owner=owner, name=f"doc-{number:04d}.md", kind="document", format="markdown", size=0, sha256="0" * 64
        )
        upload.data_name = storage.save(f"{storage.base_name(owner.pk, upload.id)}/pages.json", path)
        upload.storage_name = upload.data_name
        upload.project = project
        upload.pages = sections
        upload.save(force_insert=True)
        KnowledgeIndex.objects.create(file=upload, project=project)
        ids.append(upload.id)
    return ids


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--sections", type=int, default=100)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    settings.MEDIA_ROOT = Path(tempfile.mkdtemp(prefix="aptix-bench-media-"))
    rng = random.Random(45)
    user, _ = get_user_model().objects.get_or_create(username="bench-knowledge")
    team = team_ensure(name="Bench knowledge", owner=user)
    project = project_create(team=team, user=user, name=f"Bench {time.time_ns()}")
    print(f"database: {connection.vendor}; {args.documents} documents × {args.sections} sections")

    started = time.perf_counter()
    ids = make_documents(user, project, args.documents, args.sections, rng)
    print(f"documents stored in {time.perf_counter() - started:.1f} s")

    started = time.perf_counter()
    passages = sum(index_now(file_id) for file_id in ids)
    indexing = time.perf_counter() - started
    print(f"indexing: {passages} passages in {indexing:.1f} s = {passages / indexing:.0f} passages/s (target ≥ 200)")

    words, weights = vocabulary(random.Random(45))
    queries = [" ".join(rng.choices(words, weights, k=rng.randint(2, 6))) for _ in range(args.queries)]
    tool = KnowledgeSearchTool()
    context = ToolContext(session_id="bench", org=team, user=user, knowledge_projects=(project.pk,))

    async def timed(query: str) -> float:
        began = time.perf_counter()
        result = await tool.execute(json.dumps({"query": query, "top_k": 5}), context)
        assert result.successful, result.error_message
        return (time.perf_counter() - began) * 1000

    before = rss_bytes()
    cold = asyncio.run(timed(queries[0]))
    grown = (rss_bytes() - before) / (1 << 20)
    print(f"first search (builds the project's BM25 index): {cold:.0f} ms; RSS growth {grown:.0f} MB (target ≤ 200)")

    async def run_all() -> list[float]:
        return [await timed(query) for query in queries]

    times = asyncio.run(run_all())
    p50, p95 = statistics.median(times), percentile(times, 0.95)
    print(f"knowledge_search over {passages} passages: p50 {p50:.1f} ms, p95 {p95:.1f} ms (target p95 ≤ 150)")
    print(f"RSS growth after the searches: {(rss_bytes() - before) / (1 << 20):.0f} MB")

    # One more document: the next search answers at once (SQLite: the index at hand, built again in the
    # background; PostgreSQL: its full-text index already has it), and the time until it is found.
    (added,) = make_documents(user, project, 1, args.sections, random.Random(46))
    index_now(added)
    after = asyncio.run(timed(queries[1]))
    began = time.perf_counter()
    wait_built(project.pk)
    rebuilt = (time.perf_counter() - began) * 1000
    print(f"after one more document: a search {after:.0f} ms; its index rebuilt {rebuilt:.0f} ms later")


if __name__ == "__main__":
    main()
