"""The offline model in DDR Authoring: "draft a DDR for …" writes a DDR skeleton beside the chat and
"add a section on …" revises the current version (the user's edit included), through real turns of
the reasoner, so the README's tour shows documents without a model server."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from agents.documents.services import document_write
from agents.llm.offline import plan_reply
from agents.llm.offline.documents import skeleton, with_section
from agents.models import Document, DocumentVersion, Turn
from agents.run.reasoner import Reasoner
from agents.turns import turn_start
from tests.helpers import inline_db
from tests.helpers.offline import body, user

SECTIONS = [
    "## Purpose",
    "## Scope and Non-goals",
    "## Contract",
    "## Guidance",
    "## Testing Requirements",
    "## Approval Metadata",
]


async def run(session, text: str) -> Turn:
    turn = await sync_to_async(turn_start)(session=session, text=text)
    await Reasoner().run(turn.id)
    return await Turn.objects.aget(pk=turn.id)


def test_the_skeleton_has_every_section_of_the_house_format_and_a_section_goes_before_approval():
    title, content = skeleton("our new caching layer")
    assert title == "DDR: Our new caching layer" and content.startswith("# DDR: Our new caching layer\n")
    assert [line for line in content.splitlines() if line.startswith("## ")] == SECTIONS
    revised = with_section(content, "cache invalidation")
    headings = [line for line in revised.splitlines() if line.startswith("## ")]
    assert headings == [*SECTIONS[:-1], "## Cache invalidation", "## Approval Metadata"]
    assert with_section("# Notes\n", "risks").endswith(
        "# Notes\n\n## Risks\n\nTODO: what this DDR decides about risks.\n"
    )


async def test_without_document_write_offered_a_draft_request_is_not_a_document():
    reply = await plan_reply(body(user("Draft a DDR for caching")), modes=[])
    assert not any(call.name == "document_write" for call in reply.tool_calls)


@inline_db
async def test_the_offline_model_drafts_a_ddr_and_adds_a_section_to_the_users_version(make_session, alice):
    session = await make_session(mode="ddr-authoring", execution="ask")
    first = await run(session, "Draft a DDR for our new caching layer")
    assert first.status == "completed"
    document = await Document.objects.aget(session=session)
    assert document.title == "DDR: Our new caching layer" and document.version == 1
    assert first.answer == "Document **DDR: Our new caching layer** v1 saved: it is in the panel beside the chat."

    v1 = await DocumentVersion.objects.aget(document=document, number=1)
    edited = v1.content.replace("- **Status:** Draft", "- **Status:** Proposed")
    await sync_to_async(document_write)(
        session_id=session.id, title=v1.title, content=edited, document_id=document.id, author="user", user=alice
    )
    second = await run(session, "Add a section on cache invalidation")
    assert second.status == "completed"
    v3 = await DocumentVersion.objects.aget(document=document, number=3)
    assert (v3.author, v3.summary) == ("agent", "Added a section on cache invalidation")
    assert "- **Status:** Proposed" in v3.content  # the user's edit is what it revised
    assert v3.content.index("## Cache invalidation") < v3.content.index("## Approval Metadata")


@inline_db
async def test_in_agent_execution_the_offline_model_says_where_the_draft_is(make_session):
    session = await make_session(mode="ddr-authoring", execution="agent")
    turn = await run(session, "Please draft a DDR for API versioning.")
    assert turn.answer.startswith("I drafted **DDR: API versioning** beside the chat (version 1).")
    assert await Document.objects.filter(session=session, title="DDR: API versioning").aexists()
