"""Sharing a session with its team (agents/sharing/services.py, sessions.session_get): who may read a
shared session, that writes stay its author's, that sharing never crosses teams, that "Continue as my
copy" gives the reader's first turn the shared turns as context, and the audit of each step."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group
from django.urls import reverse

from agents.conversations import turn_resend
from agents.llm import LLMClient
from agents.models import AgentSession, ShareEvent, Turn, TurnEvent
from agents.run.reasoner import Reasoner
from agents.sessions import (
    SessionNotFoundError,
    SessionReadOnlyError,
    session_create,
    session_delete,
    session_get,
    session_readable,
)
from agents.sharing.services import session_copy, session_share
from agents.turns import turn_start
from aptix.models import Membership
from tests.helpers import inline_db
from tests.helpers.file_uploads import upload_as
from tests.helpers.files import (
    media,  # noqa: F401 - uploads go to a temporary media directory
    png_bytes,
)
from tests.helpers.scripted_model import openai_client
from tests.helpers.turns import add_events, ended_turn


@pytest.fixture
def shared(team_a, bob):
    """Bob's session, shared with team_a (alice's team too; carol is in team_b)."""
    session = session_create(team=team_a, user=bob, title="Quarterly numbers", mode="general", execution="agent")
    return session_share(session=session, user=bob, shared=True)


@pytest.mark.django_db
def test_a_teammate_reads_a_shared_session_but_may_not_change_it(shared, alice, bob):
    read = session_get(user=alice, session_id=shared.id, read=True)
    assert (read.id, read.read_only) == (shared.id, True)
    with pytest.raises(SessionReadOnlyError) as refused:
        session_get(user=alice, session_id=shared.id)  # any write asks without `read`
    assert "only its author" in str(refused.value)
    own = session_get(user=bob, session_id=shared.id)
    assert own.read_only is False
    assert session_readable(user=alice, session_id=shared.id)


@pytest.mark.django_db
def test_sharing_never_crosses_teams(shared, carol, team_b):
    for read in (True, False):
        with pytest.raises(SessionNotFoundError):
            session_get(user=carol, session_id=shared.id, read=read)
    assert not session_readable(user=carol, session_id=shared.id)
    Membership.objects.create(team=team_b, user=shared.user)  # the author in another team changes nothing
    with pytest.raises(SessionNotFoundError):
        session_get(user=carol, session_id=shared.id, read=True)


@pytest.mark.django_db
def test_an_unshared_deleted_or_orphaned_session_is_nobody_elses(shared, alice, bob):
    session_share(session=shared, user=bob, shared=False)
    with pytest.raises(SessionNotFoundError):
        session_get(user=alice, session_id=shared.id, read=True)
    session_share(session=shared, user=bob, shared=True)
    Membership.objects.filter(user=bob).delete()  # its author left the team: it leaves with them
    with pytest.raises(SessionNotFoundError):
        session_get(user=alice, session_id=shared.id, read=True)
    Membership.objects.create(team=shared.team, user=bob)
    session_delete(session=AgentSession.objects.get(pk=shared.pk))
    with pytest.raises(SessionNotFoundError):
        session_get(user=alice, session_id=shared.id, read=True)


@pytest.mark.django_db
def test_share_unshare_and_copy_are_audited_once_each(shared, alice, bob):
    session_share(session=shared, user=bob, shared=True)  # already shared: nothing to record
    session_share(session=shared, user=bob, shared=False)
    session_share(session=shared, user=bob, shared=True)
    copy = session_copy(session=session_get(user=alice, session_id=shared.id, read=True), user=alice)
    rows = list(
        ShareEvent.objects.order_by("at", "id").values_list("action", "actor__username", "session_id", "copy_id")
    )
    assert rows == [
        ("share", "bob", shared.id, None),
        ("unshare", "bob", shared.id, None),
        ("share", "bob", shared.id, None),
        ("copy", "alice", shared.id, copy.id),
    ]
    assert all(e.at is not None and e.team_id == shared.team_id for e in ShareEvent.objects.all())


@pytest.mark.django_db
def test_auditors_see_the_share_audit_in_the_admin(client, shared, bob, auditor):
    assert Group.objects.get(name="Auditors").permissions.filter(codename="view_shareevent").exists()
    client.force_login(auditor)
    page = client.get(reverse("admin:agents_shareevent_changelist"))
    assert page.status_code == 200
    assert "Shared with the team" in page.content.decode() and "bob" in page.content.decode()
    # Read-only: nobody adds, changes or deletes an audit row.
    event = ShareEvent.objects.get()
    assert client.post(reverse("admin:agents_shareevent_delete", args=[event.pk]), {"post": "yes"}).status_code == 403
    assert ShareEvent.objects.count() == 1


@pytest.mark.django_db
def test_a_copy_is_the_readers_own_linked_to_the_original_in_its_mode(shared, alice):
    done = ended_turn(shared, status="completed", message="How did Q3 go?", answer="Up 4%.", cost=1)
    add_events(done, ("turn.started", {}), ("model.delta", {"text": "Up"}), ("turn.completed", {}))
    ended_turn(shared, status="completed", index=2, message="Replaced", replaced_by=done)  # an earlier version
    Turn.objects.create(session=shared, index=3, user_message="Still running", mode=shared.mode, status="running")
    copy = session_copy(session=session_get(user=alice, session_id=shared.id, read=True), user=alice)
    assert (copy.user, copy.team, copy.mode, copy.execution, copy.copied_from_id) == (
        alice,
        shared.team,
        shared.mode,
        shared.execution,
        shared.id,
    )
    assert copy.title == "Quarterly numbers (copy)"
    turns = list(copy.turns.order_by("index"))
    assert [(t.index, t.user_message, t.answer, t.status, t.cost) for t in turns] == [
        (1, "How did Q3 go?", "Up 4%.", "completed", None)
    ]
    # Its events come along (the streamed pieces aside), so the copy's page draws the same turn.
    assert list(TurnEvent.objects.filter(turn=turns[0]).values_list("type", flat=True)) == [
        "turn.started",
        "turn.completed",
    ]
    assert session_get(user=alice, session_id=copy.id).read_only is False  # hers to write


@inline_db
async def test_the_copys_first_turn_has_the_shared_turns_as_context(make_session, run_turn, model, alice, bob):
    original = await make_session(user=alice, title="Multiplication")
    model.reply("Six times seven is 42.")
    await run_turn(original, "What is six times seven?")
    await sync_to_async(session_share)(session=original, user=alice, shared=True)
    readable = await sync_to_async(session_get)(user=bob, session_id=original.id, read=True)
    copy = await sync_to_async(session_copy)(session=readable, user=bob)

    model.reply("43.")
    turn = await run_turn(await AgentSession.objects.select_related("team").aget(pk=copy.id), "And plus one?")

    assert turn.status == "completed" and turn.index == 2
    sent = [(m["role"], m.get("content")) for m in model.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == [
        ("user", "What is six times seven?"),
        ("assistant", "Six times seven is 42."),
        ("user", "And plus one?"),
    ]


@inline_db
async def test_a_regenerate_in_a_copy_never_sends_the_authors_image(model, make_session, alice, bob):
    """A reader's copy kept the storage path of the author's image in its turns' files: after the author
    stopped sharing, Regenerate in the copy sent the author's image bytes to the model."""
    original = await make_session(user=alice, title="A picture")
    picture = await sync_to_async(upload_as)(alice, "dot.png", png_bytes())
    vision = LLMClient(openai_client(model, max_retries=0, timeout=5), model="scripted-model", label="v", vision=True)
    try:
        model.reply("A red dot.")
        turn = await sync_to_async(turn_start)(session=original, text="What is in it?", files=[picture.id])
        await Reasoner(llm=vision).run(turn.id)
        assert isinstance(model.last_messages[-1]["content"], list)  # the author's model saw the image
        await sync_to_async(session_share)(session=original, user=alice, shared=True)
        readable = await sync_to_async(session_get)(user=bob, session_id=original.id, read=True)
        copy = await sync_to_async(session_copy)(session=readable, user=bob)
        await sync_to_async(session_share)(session=original, user=alice, shared=False)

        copied = await Turn.objects.aget(session_id=copy.id, index=1)
        assert [f["name"] for f in copied.files] == ["dot.png"] and "image" not in copied.files[0]
        model.reply("I cannot tell.")
        copy_session = await AgentSession.objects.select_related("team", "user").aget(pk=copy.id)
        again = await sync_to_async(turn_resend)(session=copy_session, turn_id=copied.id, kind="regenerate")
        await Reasoner(llm=vision).run(again.id)
    finally:
        await vision.client.close()
    sent = model.last_messages[-1]
    assert sent["role"] == "user" and isinstance(sent["content"], str)  # text only: no image part
    assert "dot.png" in sent["content"] and "base64" not in json.dumps(model.last_request)
