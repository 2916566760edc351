"""The live stream of a shared session for a teammate reading it (agents/web/consumers.py, renders.py):
the running turn arrives as it does for its author but drawn without buttons (no Stop, no approval
buttons), what the reader's socket sends changes nothing, and stopping sharing closes the reader's
socket at once while the author's stays open."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.models import Turn
from agents.runner import get_runner
from agents.sharing.services import session_share
from agents.turns import turn_start
from agents.web.streams import CLOSE_ACCESS_LOST, CLOSE_SESSION_GONE
from aptix.models import Membership
from tests.helpers import inline_db
from tests.helpers.streams import collect, connect, open_socket, seqs
from tests.helpers.turns import add_events

pytestmark = inline_db


async def _shared(make_session, alice):
    session = await make_session(title="Live numbers")  # alice's, in team A (bob's team too)
    return await sync_to_async(session_share)(session=session, user=alice, shared=True)


async def test_a_reader_follows_a_running_turn_live_without_buttons(llm, model, make_session, alice, bob):
    session = await _shared(make_session, alice)
    owner, connected = await connect(session.id, alice, query="turn=&seq=0")
    assert connected
    reader, connected = await connect(session.id, bob, query="turn=&seq=0")
    assert connected
    model.reply("Revenue grew **4%**.", chunk_delay=0.01)
    turn = await sync_to_async(turn_start)(session=session, text="How did we do?")
    get_runner().start(turn.id)
    authors, readers = await collect(owner), await collect(reader)
    stored = [e.seq async for e in turn.events.order_by("seq")]
    assert seqs(readers) == stored == seqs(authors)  # every event once, in order, for both
    assert "<strong>4%</strong>" in readers[-1]
    assert any('class="stop"' in frame for frame in authors)
    assert not any('class="stop"' in frame for frame in readers)
    await owner.disconnect()
    await reader.disconnect()


async def test_a_pending_approval_reaches_a_reader_without_its_buttons(make_session, alice, bob):
    session = await _shared(make_session, alice)
    turn = await Turn.objects.acreate(
        session=session, index=1, user_message="Add a note", mode=session.mode, status="awaiting_approval"
    )
    call = {"id": "call_1", "name": "notes__add_note", "kind": "mcp", "arguments": "{}", "reason": ""}
    await sync_to_async(add_events)(turn, ("turn.started", {}), ("approval.requested", {"calls": [call]}))
    reader = await open_socket(session.id, bob, query="turn=&seq=0")  # replays the session's events
    frames = "".join(await reader.frames())
    assert "notes__add_note" in frames and "Waiting for the author" in frames
    assert "Allow once" not in frames and "approval-actions" not in frames and "/approvals/" not in frames
    author = await open_socket(session.id, alice, query="turn=&seq=0")
    assert "Allow once" in "".join(await author.frames())
    await reader.communicator.disconnect()
    await author.communicator.disconnect()


async def test_another_teams_member_never_gets_the_stream(make_session, alice, carol):
    session = await _shared(make_session, alice)
    communicator, connected = await connect(session.id, carol, query="turn=&seq=0")
    assert not connected
    await communicator.disconnect()


async def test_what_a_readers_socket_sends_changes_nothing(make_session, alice, bob):
    session = await _shared(make_session, alice)
    reader = await open_socket(session.id, bob)
    await reader.communicator.send_to(text_data='{"message": "Hi", "decision": "allow-once"}')
    assert await reader.communicator.receive_nothing(timeout=0.3)
    assert await Turn.objects.filter(session=session).acount() == 0
    await reader.communicator.disconnect()


async def test_stop_sharing_closes_a_readers_socket_at_once(make_session, alice, bob):
    session = await _shared(make_session, alice)
    reader = await open_socket(session.id, bob)
    author = await open_socket(session.id, alice)
    await sync_to_async(session_share)(session=session, user=alice, shared=False)
    assert await reader.closed_with() == CLOSE_ACCESS_LOST
    assert await author.communicator.receive_nothing(timeout=0.3)  # the author's own view stays
    _, connected = await connect(session.id, bob)
    assert not connected
    await author.communicator.disconnect()


async def test_deleting_a_shared_session_closes_its_readers_sockets(make_session, alice, bob):
    session = await _shared(make_session, alice)
    reader = await open_socket(session.id, bob)
    session.deleted_at = timezone.now()
    await session.asave(update_fields=["deleted_at"])
    assert await reader.closed_with() == CLOSE_SESSION_GONE


async def test_an_author_leaving_the_team_closes_the_readers_sockets(make_session, alice, bob):
    session = await _shared(make_session, alice)
    reader = await open_socket(session.id, bob)
    await Membership.objects.filter(user=alice, team_id=session.team_id).adelete()
    assert await reader.closed_with() == CLOSE_ACCESS_LOST
