"""document_write and document_read through a real Agent turn on the scripted model: every version
kept and attributed, the timeline's event, errors the model can act on, and documents staying
inside their session."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.documents.services import DocumentError, document_write
from agents.models import Document, DocumentVersion
from agents.sessions import session_delete
from tests.helpers import inline_db
from tests.helpers.events import events_of

pytestmark = inline_db

DRAFT = "# TUL-008 API versioning\n\n## Status\n\nDraft\n"
REVISED = DRAFT + "\n## Testing Requirements\n\n- TODO\n"


def tool_result(turn_messages: list[dict]) -> dict:
    """The last tool result the model got (earlier turns' results come with the history)."""
    return json.loads([m for m in turn_messages if m.get("role") == "tool"][-1]["content"])


async def test_the_agent_writes_then_revises_a_document_every_version_kept(make_session, run_turn, model):
    session = await make_session(mode="ddr-authoring", execution="agent")
    model.reply("", tool_calls=[("document_write", {"title": "TUL-008", "content": DRAFT})])
    model.reply("Drafted TUL-008 beside the chat.")
    first = await run_turn(session, "Draft a DDR for API versioning")

    assert "document_write" in model.last_tools and "document_read" in model.last_tools
    document = await Document.objects.aget(session=session)
    assert tool_result(model.last_messages) == {"documentId": document.id, "version": 1, "title": "TUL-008"}
    [updated] = await events_of(first, "document.updated")
    assert updated == {"documentId": document.id, "title": "TUL-008", "version": 1, "author": "agent"}

    model.reply(
        "",
        tool_calls=[
            (
                "document_write",
                {"title": "TUL-008", "content": REVISED, "documentId": document.id, "summary": "testing section"},
            )
        ],
    )
    model.reply("Added the testing section.")
    second = await run_turn(session, "Add a section on testing")
    assert tool_result(model.last_messages)["version"] == 2
    [updated] = await events_of(second, "document.updated")
    assert (updated["version"], updated["summary"]) == (2, "testing section")

    versions = [v async for v in DocumentVersion.objects.filter(document=document).order_by("number")]
    assert [(v.number, v.content, v.author, v.turn_id) for v in versions] == [
        (1, DRAFT, "agent", first.id),
        (2, REVISED, "agent", second.id),
    ]
    assert (await Document.objects.aget(pk=document.id)).version == 2


async def test_document_read_returns_the_current_or_an_earlier_version(make_session, run_turn, model):
    session = await make_session(mode="ddr-authoring", execution="agent")
    v1 = await sync_to_async(document_write)(session_id=session.id, title="Doc", content="one")
    await sync_to_async(document_write)(session_id=session.id, title="Doc", content="two", document_id=v1.document_id)
    model.reply("", tool_calls=[("document_read", {"documentId": v1.document_id, "version": 1})])
    model.reply("", tool_calls=[("document_read", {"documentId": v1.document_id})])
    model.reply("Read.")
    await run_turn(session, "Compare")
    results = [json.loads(m["content"]) for m in model.last_messages if m.get("role") == "tool"]
    assert [(r["version"], r["content"]) for r in results] == [(1, "one"), (2, "two")]


async def test_a_document_of_another_session_is_not_found_and_left_unchanged(make_session, run_turn, model):
    other = await make_session(mode="ddr-authoring")
    theirs = await sync_to_async(document_write)(session_id=other.id, title="Theirs", content="secret")
    session = await make_session(mode="ddr-authoring", execution="agent")
    model.reply("", tool_calls=[("document_read", {"documentId": theirs.document_id})])
    model.reply(
        "",
        tool_calls=[("document_write", {"title": "Mine", "content": "x", "documentId": theirs.document_id})],
    )
    model.reply("Could not.")
    turn = await run_turn(session, "Read theirs")
    errors = [json.loads(m["content"])["error"] for m in model.last_messages if m.get("role") == "tool"]
    assert len(errors) == 2 and all(f"No document {theirs.document_id!r} in this session." == e for e in errors)
    assert "secret" not in json.dumps(model.last_messages)
    assert await events_of(turn, "document.updated") == []
    assert await DocumentVersion.objects.filter(document_id=theirs.document_id).acount() == 1


async def test_a_version_over_the_size_limit_is_refused_with_a_message_the_model_can_act_on(
    make_session, run_turn, model, settings
):
    settings.APTIX_DOCUMENT_MAX_CHARS = 100
    session = await make_session(mode="ddr-authoring", execution="agent")
    model.reply("", tool_calls=[("document_write", {"title": "Big", "content": "x" * 101})])
    model.reply("", tool_calls=[("document_write", {"title": "  ", "content": "x"})])
    model.reply("", tool_calls=[("document_read", {"documentId": "nope", "version": 0})])
    model.reply("Done.")
    await run_turn(session, "Write it")
    errors = [json.loads(m["content"])["error"] for m in model.last_messages if m.get("role") == "tool"]
    assert errors == [
        "The document is 101 characters; a version may have at most 100. "
        "Shorten it or split it into several documents.",
        "document_write requires 'title' to be a non-empty string.",
        "document_read requires 'version' to be a whole number from 1 when given.",
    ]
    assert await Document.objects.filter(session=session).acount() == 0


async def test_modes_whose_policy_does_not_name_the_tools_do_not_offer_them(make_session, run_turn, model):
    session = await make_session(mode="data-analysis", execution="agent")
    model.reply("Hi.")
    await run_turn(session, "Hello")
    assert "document_write" not in model.last_tools


@pytest.mark.django_db
def test_a_version_is_immutable(team_a, alice):
    from agents.sessions import session_create

    session = session_create(team=team_a, user=alice)
    version = document_write(session_id=session.id, title="Doc", content="one")
    version.content = "changed"
    with pytest.raises(ValueError, match="immutable"):
        version.save()
    with pytest.raises(DocumentError, match="non-empty 'title'"):
        document_write(session_id=session.id, title="", content="x")


@pytest.mark.django_db
def test_deleting_the_session_purges_its_documents_and_every_version(team_a, alice):
    from agents.sessions import session_create

    session = session_create(team=team_a, user=alice)
    kept = session_create(team=team_a, user=alice)
    v1 = document_write(session_id=session.id, title="Doc", content="one")
    document_write(session_id=session.id, title="Doc", content="two", document_id=v1.document_id)
    document_write(session_id=kept.id, title="Other", content="stays")
    session_delete(session=session)
    assert not Document.objects.filter(session=session).exists()
    assert not DocumentVersion.objects.filter(document_id=v1.document_id).exists()
    assert Document.objects.filter(session=kept).count() == 1


async def test_a_mode_whose_approval_policy_names_document_write_ask_holds_the_call(make_session, run_turn, model):
    from modes.models import AgentMode

    await AgentMode.objects.filter(key="ddr-authoring").aupdate(approval_policy=["document_write: ask", "*: auto"])
    session = await make_session(mode="ddr-authoring", execution="agent")
    model.reply("", tool_calls=[("document_write", {"title": "Held", "content": "x"})])
    turn = await run_turn(session, "Draft it")
    assert turn.status == "awaiting_approval"
    assert await Document.objects.filter(session=session).acount() == 0
    [requested] = await events_of(turn, "approval.requested")
    assert [call["name"] for call in requested["calls"]] == ["document_write"]
