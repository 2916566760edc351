"""The session stream `/ws/sessions/<id>/` through the real ASGI application: auth, ownership and
Origin before anything is sent, live fragments, and resuming after a `seq` without gaps or repeats."""

from __future__ import annotations

import asyncio
import re
from html.parser import HTMLParser

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from agents.events.channel import MOVED_GATHER, session_moved, session_titled, sidebar_moves
from agents.models import AgentSession, Turn
from agents.runner import get_runner
from agents.turns import turn_start
from aptix.asgi import application
from tests.helpers import async_db
from tests.helpers.streams import CURSOR, ORIGIN, TAIL, collect, connect, seqs, session_cookie

pytestmark = async_db


async def test_anonymous_other_users_and_bad_origins_are_refused(make_session, alice, bob, carol):
    session = await make_session()  # alice's, in team A
    for user, origin in [(None, ORIGIN), (bob, ORIGIN), (carol, ORIGIN), (alice, (b"origin", b"http://evil.example"))]:
        communicator, connected = await connect(session.id, user, origin=origin)
        assert not connected, (user, origin)
        await communicator.disconnect()
    communicator, connected = await connect("0" * 32, alice)  # no such session: same answer
    assert not connected


async def test_owner_sees_the_turn_stream_live(llm, model, make_session, alice):
    session = await make_session()
    communicator, connected = await connect(session.id, alice)
    assert connected
    model.reply("Hello **there**. <script>alert(1)</script>")
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    get_runner().start(turn.id)
    messages = await collect(communicator)
    await communicator.disconnect()
    stored = [e.seq async for e in turn.events.order_by("seq")]
    assert seqs(messages) == stored  # every event once, in order
    final = messages[-1]
    assert "<strong>there</strong>" in final and "<script>" not in final and "&lt;script&gt;" in final
    assert 'id="composer"' in final and "disabled" not in final.split('id="composer"')[1].split("</fieldset>")[0]
    assert f'id="session-meta-{session.id}" hx-swap-oob="true"' in final  # the sidebar entry is current
    # Streamed text arrives while the turn runs: rendered as Markdown whole (the first delta, then each
    # time it doubled), and in between appended as escaped text (agents/web/live.py).
    live = [m for m in messages[:-1] if f'id="turn-{turn.id}-live" hx-swap-oob="true"' in m]
    assert live and "<p>" in live[0]
    tails = [m for m in messages[:-1] if TAIL.match(m)]
    assert all("<script>" not in m for m in tails) and any("&lt;script&gt;" in m for m in tails + live)


async def test_resume_after_seq_replays_exactly_the_missed_events(llm, model, make_session, alice):
    session = await make_session(execution="agent")
    model.reply("Checking.", tool_calls=[("agent_list_modes", "{}")])
    model.reply("Done.")
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    get_runner().start(turn.id)
    await get_runner().wait(turn.id)
    stored = [e.seq async for e in turn.events.order_by("seq")]
    communicator, connected = await connect(session.id, alice, query=f"turn={turn.id}&seq=3")
    assert connected
    messages = await collect(communicator)
    assert seqs(messages) == stored[3:]
    assert await communicator.receive_nothing(timeout=0.2)  # and nothing after
    await communicator.disconnect()


async def test_resume_mid_turn_has_no_gaps_or_duplicates(llm, model, make_session, alice):
    session = await make_session()
    model.reply("word " * 60, chunk_delay=0.01)  # streams for ~0.6 s
    turn = await sync_to_async(turn_start)(session=session, text="Talk")
    task = get_runner().start(turn.id)
    async with asyncio.timeout(10):  # fails rather than hangs if the turn never streams
        while await turn.events.filter(type="model.delta").acount() < 2:
            await asyncio.sleep(0.01)  # the turn is mid-stream: let a few events be written
    seen = await turn.events.acount()
    communicator, connected = await connect(session.id, alice, query=f"turn={turn.id}&seq={seen - 1}")
    assert connected
    messages = await collect(communicator)
    await task
    stored = [e.seq async for e in turn.events.order_by("seq")]
    assert seqs(messages) == stored[seen - 1 :]  # replayed + live, each once, in order
    # The live text shown after resuming is the whole reply so far, not only what this connection
    # saw stream (the text before the cursor is read back from the database).
    deltas = [(e.seq, e.payload["text"]) async for e in turn.events.filter(type="model.delta").order_by("seq")]
    live = [m for m in messages if f'id="turn-{turn.id}-live" hx-swap-oob="true"' in m and "<p>" in m]
    last_seq = int(CURSOR.search(live[-1]).group(2))
    shown = re.sub(r"<[^>]+>", " ", live[-1].split('id="stream-cursor"')[0].rsplit("<div", 1)[0]).split()
    assert shown == "".join(text for seq, text in deltas if seq <= last_seq).split()
    refreshed = await Turn.objects.aget(pk=turn.id)
    assert refreshed.status == "completed" and refreshed.answer.strip() in messages[-1]
    await communicator.disconnect()


async def test_a_page_without_a_cursor_gets_the_running_turn_from_its_start(llm, model, make_session, alice):
    session = await make_session()
    model.reply("slow answer", chunk_delay=0.05)
    turn = await sync_to_async(turn_start)(session=session, text="Hi")
    task = get_runner().start(turn.id)
    async with asyncio.timeout(10):  # fails rather than hangs if the turn never starts
        while not await turn.events.aexists():
            await asyncio.sleep(0.01)
    communicator, _connected = await connect(session.id, alice)
    messages = await collect(communicator)
    await task
    assert seqs(messages) == [e.seq async for e in turn.events.order_by("seq")]
    await communicator.disconnect()


class _TopLevel(HTMLParser):
    """The top-level elements of a fragment: (tag, attributes)."""

    VOID = frozenset({"img", "br", "hr", "input", "meta", "link"})

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.elements: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        if self.depth == 0:
            self.elements.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag not in self.VOID:
            self.depth -= 1


async def test_every_live_fragment_names_its_target(llm, model, make_session, alice):
    """htmx's ws extension swaps each top-level element of a message out of band: one without
    hx-swap-oob (or, swapped in place, without an id) has no target, which htmx reports as a console
    error (oobErrorNoTarget, "#null") and drops. A chart's image after its tool card was one."""
    session = await make_session(execution="agent")
    chart = {"prompt": "Sales", "kind": "bar", "title": "Sales", "labels": ["a", "b"], "values": [1, 2]}
    model.reply("Drawing it.", tool_calls=[("image_gen", chart)])
    model.reply("Here it is.")
    communicator, connected = await connect(session.id, alice)
    assert connected
    turn = await sync_to_async(turn_start)(session=session, text="Chart a=1 b=2")
    get_runner().start(turn.id)
    messages = await collect(communicator)
    await communicator.disconnect()

    assert any('class="item item-image"' in m for m in messages)  # the image was streamed
    for message in messages:
        parser = _TopLevel()
        parser.feed(message)
        for tag, attrs in parser.elements:
            swap = attrs.get("hx-swap-oob")
            assert swap, f"<{tag} {attrs}> has no hx-swap-oob in {message[:300]}"
            if ":" not in swap:
                assert attrs.get("id"), f"<{tag} {attrs}> is swapped by id but has none"


async def test_the_origin_must_match_the_servers_host_and_port(make_session, alice, settings):
    """A page on another port of the same host (another local service) may not open the user's
    stream: the Origin's port counts (it once did not)."""
    session = await make_session()
    cookie = (b"cookie", await session_cookie(alice))
    path = f"/ws/sessions/{session.id}/"
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    for origin, allowed in [
        (b"http://127.0.0.1:8000", True),
        (b"http://127.0.0.1:9999", False),
        (b"http://localhost:8000", False),
        (b"null", False),
    ]:
        headers = [(b"origin", origin), (b"host", b"127.0.0.1:8000"), cookie]
        communicator = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await communicator.connect()
        assert connected is allowed, origin
        await communicator.disconnect()
    settings.CSRF_TRUSTED_ORIGINS = ["https://aptix.example.com"]
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "aptix.example.com"]
    headers = [(b"origin", b"https://aptix.example.com"), (b"host", b"127.0.0.1:8000"), cookie]
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect()
    assert connected  # a trusted origin (a proxy in front) is accepted
    await communicator.disconnect()


def test_origin_rules(settings):
    from aptix.origins import origin_allowed

    settings.ALLOWED_HOSTS = ["aptix.local"]
    assert not origin_allowed("http://evil.example", None)  # not an allowed host
    assert origin_allowed("https://aptix.local", "aptix.local:443")
    assert origin_allowed("http://aptix.local", "aptix.local")
    assert not origin_allowed("http://aptix.local:8080", "aptix.local")
    assert not origin_allowed("ftp://aptix.local", "aptix.local")


async def test_a_turn_in_another_session_moves_it_up_in_this_pages_sidebar(make_session, alice):
    """Each of the user's sockets hears that a session of theirs got a turn (the page puts it first
    in the sidebar). It is sent once per turn to every socket of the user, so its handling makes no
    database round trip (consumers.py dispatch)."""
    here, elsewhere = await make_session(), await make_session()
    communicator, connected = await connect(here.id, alice)
    assert connected
    await sync_to_async(turn_start)(session=elsewhere, text="Hi")
    note = await communicator.receive_from(timeout=5)
    await communicator.disconnect()
    assert note == f'<div id="session-moved" hidden hx-swap-oob="true" data-sessions="{elsewhere.id}"></div>'


async def test_a_burst_of_turns_in_the_users_sessions_is_one_sidebar_note_in_the_order_they_moved(make_session, alice):
    """On a serving loop the notes are gathered (events/channel.py SidebarMoves): a program starting
    turns in three sessions at once costs each of the user's sockets one note, not three, and it lists
    the sessions oldest move first, so the page puts the last one on top."""
    here, first, second = await make_session(), await make_session(), await make_session()
    communicator, connected = await connect(here.id, alice)
    assert connected
    sidebar_moves.bind(asyncio.get_running_loop())
    try:
        for session in (first, second, first):  # from the request threads, as turn_start's on_commit
            await asyncio.to_thread(session_moved, alice.id, session.id)
        note = await communicator.receive_from(timeout=5)
        assert await communicator.receive_nothing(timeout=MOVED_GATHER * 2)
    finally:
        sidebar_moves.bind(None)
        await communicator.disconnect()
    assert note == f'<div id="session-moved" hidden hx-swap-oob="true" data-sessions="{second.id} {first.id}"></div>'


async def test_titles_given_at_once_are_one_note_to_each_socket(make_session, alice):
    """Gathered as the moves: 500 new sessions named while their user has 500 sockets open cost each
    socket a few notes, not 500 (the fan-out that grew a stream's CPU with the number of streams)."""
    here, first, second = await make_session(), await make_session(), await make_session()
    communicator, connected = await connect(here.id, alice)
    assert connected
    sidebar_moves.bind(asyncio.get_running_loop())
    try:
        await session_titled(alice.id, first.id, "Q1 plan")
        await session_titled(alice.id, here.id, "Here & now")
        await session_titled(alice.id, second.id, "Q2 plan")
        note = await communicator.receive_from(timeout=5)
        assert await communicator.receive_nothing(timeout=MOVED_GATHER * 2)
    finally:
        sidebar_moves.bind(None)
        await communicator.disconnect()
    assert note == (  # the sidebar's entries (the same for each of the user's sockets), then this page's header
        f'<span id="session-title-{first.id}" hx-swap-oob="true">Q1 plan</span>'
        f'<span id="session-title-{here.id}" hx-swap-oob="true">Here &amp; now</span>'
        f'<span id="session-title-{second.id}" hx-swap-oob="true">Q2 plan</span>'
        '<h1 id="session-title" title="Here &amp; now" hx-swap-oob="true">Here &amp; now</h1>'
    )


async def test_a_title_given_after_the_first_answer_shows_in_the_header_and_sidebar_at_once(
    llm, model, make_session, alice, settings
):
    """The title is written by a task of its own after the turn ended (agents/run/titles.py): without a
    note on the stream the page kept the first message as its name until reloaded. A model wrote the
    title, so it arrives escaped."""
    settings.APTIX_AUTO_TITLES = True
    session = await make_session()
    communicator, connected = await connect(session.id, alice)
    assert connected
    model.reply("March was best.")
    model.reply("Revenue <b>by</b> month & more")
    turn = await sync_to_async(turn_start)(session=session, text="Which month was best?")
    get_runner().start(turn.id)
    await collect(communicator)
    note = await communicator.receive_from(timeout=5)
    while note.startswith('<div id="session-moved"'):
        note = await communicator.receive_from(timeout=5)
    await communicator.disconnect()
    shown = "Revenue &lt;b&gt;by&lt;/b&gt; month &amp; more"
    assert note == (
        f'<span id="session-title-{session.id}" hx-swap-oob="true">{shown}</span>'
        f'<h1 id="session-title" title="{shown}" hx-swap-oob="true">{shown}</h1>'
    )
    assert (await AgentSession.objects.aget(pk=session.id)).title == "Revenue <b>by</b> month & more"


async def test_a_title_note_of_another_session_renames_only_its_sidebar_entry(make_session, alice):
    here, elsewhere = await make_session(), await make_session()
    communicator, connected = await connect(here.id, alice)
    assert connected
    await session_titled(alice.id, elsewhere.id, "Quarterly plan")
    await session_titled(alice.id, "not-a-session-id", "<script>")  # nothing a page could be told
    note = await communicator.receive_from(timeout=5)
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()
    assert note == f'<span id="session-title-{elsewhere.id}" hx-swap-oob="true">Quarterly plan</span>'
