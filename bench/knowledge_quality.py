"""Benchmark: retrieval quality of knowledge search (files/knowledge/) on a public corpus that ships
inside a package, so it runs with no network.

Corpus: the Python Language Reference's topics that ship with CPython (`pydoc_data.topics`, the text
`help("with")` prints): 79 documents, ~465 KB. Each topic is uploaded to a project as a Markdown
document through the real pipeline (projects/files.py → ingestion → the knowledge indexer), under a
neutral name, the same for all (`reference.md`: a number in a name would be a word a question can
match, and a query word in a document's name ranks that document first). Questions:
`bench/knowledge_quality/questions.json`, 220+ developer questions, each with the topics whose text
answers it (binary relevance, judged per document).

For each question the project is searched as `knowledge_search` does (files/knowledge/search.py), the
passages folded into their documents in rank order, and the first ten documents scored:
- nDCG@10: Σ 1/log2(rank+1) over the relevant documents found, divided by the ideal's;
- recall@10: the share of the question's relevant documents among the ten;
- MRR@10 for reference.

Runs BM25 alone, then — with `--embedding-url` — hybrid (BM25 fused with the embedding model's
nearest passages by reciprocal rank), and prints the embedding rate (passages/s) of that model.

    .venv/bin/python bench/knowledge_quality.py
    .venv/bin/python bench/knowledge_quality.py --embedding-url http://127.0.0.1:8092/v1 --embedding-model local
    DEBUG=false bin/with-postgres .venv/bin/python bench/knowledge_quality.py   (PostgreSQL full-text)
(SQLite in a temp dir when DATABASE_URL is unset.)
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchenv import setup_django  # bench/benchenv.py: this script runs from bench/

setup_django(LOG_LEVEL="WARNING")

from pydoc_data.topics import topics

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection

from aptix.teams import team_ensure
from files.knowledge import embeddings
from files.knowledge.indexing import wait_idle
from files.knowledge.search import search
from files.models import Passage
from projects.files import project_file_upload
from projects.services import project_create

QUESTIONS = Path(__file__).parent / "knowledge_quality" / "questions.json"
DEPTH = 10
UNDERLINES = {"*": "#", "=": "##", "-": "###"}


def as_markdown(text: str) -> str:
    """A topic's reST-style headings (a line underlined with *, = or -) as Markdown headings."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        below = lines[index + 1] if index + 1 < len(lines) else ""
        mark = below[:1]
        if line.strip() and mark in UNDERLINES and re.fullmatch(re.escape(mark) + "{3,}", below.strip()):
            out.append(f"{UNDERLINES[mark]} {line.strip()}")
            index += 2
            continue
        out.append(line)
        index += 1
    return "\n".join(out)


def upload_corpus(user, project) -> dict[str, str]:
    """Upload every topic; {file id: topic key}."""
    by_file: dict[str, str] = {}
    for key in sorted(topics):
        upload = SimpleUploadedFile("reference.md", as_markdown(topics[key]).encode(), content_type="text/markdown")
        stored = project_file_upload(user=user, project=project, uploaded=upload)
        by_file[str(stored.pk)] = key
    return by_file


def ranked_documents(project_id: str, question: str, by_file: dict[str, str]) -> list[str]:
    """The first DEPTH distinct topics of the question's passages, best first."""
    found: list[str] = []
    for hit in search([project_id], question, top_k=50).hits:
        key = by_file[str(hit.file_id)]
        if key not in found:
            found.append(key)
        if len(found) == DEPTH:
            break
    return found


def scores(found: list[str], relevant: set[str]) -> tuple[float, float, float]:
    dcg = sum(1 / math.log2(rank + 2) for rank, key in enumerate(found) if key in relevant)
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(relevant), DEPTH)))
    first = next((rank + 1 for rank, key in enumerate(found) if key in relevant), None)
    return dcg / ideal, len(relevant & set(found)) / len(relevant), (1 / first if first else 0.0)


def evaluate(label: str, project_id: str, questions: list[dict], by_file: dict[str, str]) -> dict[str, float]:
    ndcg, recall, mrr, took = [], [], [], []
    for item in questions:
        began = time.perf_counter()
        found = ranked_documents(project_id, item["q"], by_file)
        took.append((time.perf_counter() - began) * 1000)
        n, r, m = scores(found, set(item["relevant"]))
        ndcg.append(n)
        recall.append(r)
        mrr.append(m)
    figures = {
        "nDCG@10": statistics.mean(ndcg),
        "recall@10": statistics.mean(recall),
        "MRR@10": statistics.mean(mrr),
    }
    shown = ", ".join(f"{name} {value:.3f}" for name, value in figures.items())
    print(f"{label}: {shown} ({len(questions)} questions; search p50 {statistics.median(took):.0f} ms)")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedding-url", help="an OpenAI-compatible /v1 base URL serving /v1/embeddings")
    parser.add_argument("--embedding-model", default="local", help="the model name that server knows")
    args = parser.parse_args()
    questions = json.loads(QUESTIONS.read_text())
    unknown = sorted({key for item in questions for key in item["relevant"]} - set(topics))
    if unknown:
        sys.exit(f"{QUESTIONS}: topics not in this Python's pydoc_data: {', '.join(unknown)}")
    call_command("migrate", verbosity=0)
    settings.MEDIA_ROOT = Path(tempfile.mkdtemp(prefix="aptix-bench-media-"))
    user, _ = get_user_model().objects.get_or_create(username="bench-quality")
    team = team_ensure(name="Bench quality", owner=user)
    print(
        f"database: {connection.vendor}; corpus: pydoc_data.topics of Python {sys.version.split()[0]}"
        f" ({len(topics)} documents); {len(questions)} questions"
    )

    project = project_create(team=team, user=user, name=f"Reference {time.time_ns()}")
    began = time.perf_counter()
    by_file = upload_corpus(user, project)
    wait_idle()
    passages = Passage.objects.filter(project_id=project.pk).count()
    print(f"uploaded and indexed: {passages} passages in {time.perf_counter() - began:.1f} s")
    evaluate("BM25", str(project.pk), questions, by_file)

    if args.embedding_url:
        model = embeddings.EmbeddingModel(
            key="bench-embedding", model=args.embedding_model, base_url=args.embedding_url
        )
        embeddings.configure(lambda: model)
        began = time.perf_counter()
        embedded = embeddings.embed_missing()
        took = time.perf_counter() - began
        rate = embedded / took
        print(f"embedding: {embedded} passages in {took:.1f} s = {rate:.1f} passages/s ({args.embedding_model})")
        evaluate("hybrid (BM25 + embeddings, RRF)", str(project.pk), questions, by_file)


if __name__ == "__main__":
    main()
