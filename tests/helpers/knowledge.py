"""Project documents for the knowledge search tests: uploaded through the files service like any file,
then made the project's (its `project` set, no session), as the project upload does, and indexed
through the one entry point the upload calls (files/knowledge `index_file`); `indexed` awaits the
indexer's thread (its futures), never a sleep."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile

from files.knowledge import index_file, wait_idle
from files.knowledge.indexing import index_now
from files.models import KnowledgeIndex, SessionFile
from files.services import file_upload

POLICY_MD = """# Travel policy

## Hotels
Employees book hotels of at most four stars. The nightly limit is 180 euros in capitals and 120 euros
elsewhere; a receipt is required for every night.

## Meals
Meals on a trip are refunded up to 45 euros a day, alcohol excluded.

## Trains and flights
Trains are taken for trips under four hours; flights are economy class, business class only for
flights longer than eight hours.
"""

SECURITY_MD = """# Security handbook

## Passwords
Passwords have at least fourteen characters and are kept in the company password manager.

## Laptops
A lost laptop is reported to the service desk within one hour; disks are encrypted.
"""


def project_document(
    owner: Any, project: Any, name: str, text: str | bytes, *, index: bool = True, now: bool = False
) -> SessionFile:
    """The project's document `name`; indexed in the background (`index`), or at once in this thread
    (`now`: for a test in one transaction, which the indexer's thread would not see)."""
    data = text.encode() if isinstance(text, str) else text
    stored = file_upload(owner=owner, uploaded=SimpleUploadedFile(name, data))
    SessionFile.objects.filter(pk=stored.pk).update(project=project, session=None)
    stored.refresh_from_db()
    if now:  # what index_file marks, then its thread's work
        KnowledgeIndex.objects.create(file=stored, project=project)
        index_now(stored.pk)
    elif index:
        index_file(stored)
    return stored


def indexed(timeout: float = 60) -> None:
    """Return once every document handed to the indexer so far is indexed (or failed)."""
    wait_idle(timeout)


# A tiny "semantic" space: each passage and question is its concepts' vector.
CONCEPTS = {
    "lodging": {"hotel", "hotels", "sleep", "overnight", "night", "stay", "stars"},
    "food": {"meal", "meals", "eat", "lunch", "dinner", "food"},
    "transport": {"train", "trains", "flight", "flights", "travel", "fly"},
}


def concept_vector(text: str) -> list[float]:
    words = set(re.findall(r"\w+", text.lower()))
    return [float(len(words & vocabulary)) + 0.01 for vocabulary in CONCEPTS.values()]


def models_file(tmp_path, url: str, embedding_key: str = "embedder") -> str:
    path = tmp_path / "models.json"
    path.write_text(
        json.dumps(
            {
                "providers": {"local": {"baseUrl": f"{url}/v1"}},
                "models": {
                    "chat": {"provider": "local", "model": "scripted-model"},
                    embedding_key: {"provider": "local", "model": "fake-embedding", "embedding": True},
                },
                "default": "chat",
            }
        )
    )
    return str(path)


SAMPLES = Path(__file__).resolve().parents[2] / "aptix" / "demo_data"
OTHER_POLICIES = {  # the search has to find the travel policy's page among three policies
    "it_security_policy.pdf": [
        "IT security policy. Passwords must have at least 14 characters.",
        "Laptops are encrypted. Report a lost laptop to the service desk within one hour.",
    ],
    "remote_work_policy.pdf": [
        "Remote work policy. Employees may work remotely up to three days a week.",
        "Working from a hotel or a cafe needs the company VPN.",
    ],
}


def sales_project(team: Any, owner: Any) -> Any:
    """A project "Sales" with the sample sales CSV and travel policy PDF (aptix/demo_data/) and two more
    policies (PDFs), uploaded once through the real pipeline and indexed (the CSV is a table: not)."""
    from django.core.files import File

    from projects.files import project_file_upload
    from projects.services import project_create

    from .files import pdf_bytes, uploaded

    project = project_create(team=team, user=owner, name="Sales")
    for name in ("quarterly_sales.csv", "travel_policy.pdf"):
        with open(SAMPLES / name, "rb") as handle:
            project_file_upload(user=owner, project=project, uploaded=File(handle, name=name))
    for name, pages in OTHER_POLICIES.items():
        project_file_upload(user=owner, project=project, uploaded=uploaded(name, pdf_bytes(pages)))
    indexed()
    return project
