"""Every turn's request carries the current version of the session's documents, so the text the user
edited is the text the next turn works on; within the context budget (most recently changed first,
long ones as their outline and a pointer to document_read)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.documents.outline import LEFT_OUT_NOTE, OUTLINE_NOTE, documents_block, outline
from agents.documents.services import document_write, documents_current
from agents.models import Document
from tests.helpers import inline_db

DRAFT = "# TUL-008\n\n## Status\n\nDraft\n"
EDITED = "# TUL-008\n\n## Status\n\nProposed by Alice after review\n"


@inline_db
async def test_a_users_edit_is_what_the_next_turns_request_contains(make_session, run_turn, model, alice):
    session = await make_session(mode="ddr-authoring", execution="agent")
    model.reply("", tool_calls=[("document_write", {"title": "TUL-008", "content": DRAFT})])
    model.reply("Drafted.")
    await run_turn(session, "Draft a DDR for API versioning")
    document = await Document.objects.aget(session=session)

    await sync_to_async(document_write)(
        session_id=session.id, title="TUL-008", content=EDITED, document_id=document.id, author="user", user=alice
    )
    model.reply("Looks good.")
    await run_turn(session, "Check my edit")
    system = model.last_messages[0]
    assert system["role"] == "system"
    assert f'<document id="{document.id}" title="TUL-008" version="2" by="the user">\n{EDITED}' in system["content"]
    assert "Proposed by Alice" not in model.requests[0]["messages"][0]["content"]  # the first turn had none


@inline_db
async def test_a_session_without_documents_adds_nothing(make_session, run_turn, model):
    session = await make_session(mode="ddr-authoring")
    model.reply("Hi.")
    await run_turn(session, "Hello")
    assert "Documents of this session" not in model.last_messages[0]["content"]


@pytest.mark.django_db
def test_documents_fit_the_budget_newest_first_then_as_outlines_then_by_id(team_a, alice):
    from agents.sessions import session_create

    session = session_create(team=team_a, user=alice)
    old = document_write(session_id=session.id, title="Old", content="# Old\n\n" + "old words " * 200)
    long = document_write(
        session_id=session.id,
        title="Long",
        content="# Long\n\n## Scope\n\n" + "x" * 2000 + "\n```\n# not a heading\n```\n## Contract\n",
    )
    short = document_write(session_id=session.id, title="Short", content="Short text.")
    versions = documents_current(session_id=session.id)
    assert [v.title for v in versions] == ["Short", "Long", "Old"]  # the most recently changed first

    room = len(documents_block(versions[:1], len, 10**6)) + 300  # counting characters: the short one, an outline
    block = documents_block(versions, len, room)
    assert block.index(short.document_id) < block.index(long.document_id) < block.index(old.document_id)
    assert "Short text." in block
    assert f"{OUTLINE_NOTE}\n# Long\n## Scope\n## Contract" in block and "x" * 100 not in block
    assert LEFT_OUT_NOTE in block and "old words" not in block
    assert documents_block(versions, len, 100_000).count("</document>") == 3
    assert "old words old words" in documents_block(versions, len, 100_000)
    assert documents_block([], len, 100) == ""


def test_an_outline_is_the_headings_outside_code_blocks():
    assert outline("# A\ntext\n## B\n```\n# comment\n```\n### C") == "# A\n## B\n### C"
    assert outline("no headings") == "(no headings)"
