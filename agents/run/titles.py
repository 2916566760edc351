"""Short titles for new sessions (APTIX_AUTO_TITLES): after a session's first answer, one small model
call without tools names it ("Monthly revenue chart" rather than "Chart revenue by month fo…"), unless
the user named it meanwhile. It never holds up or fails a turn: it runs as a task of its own once the
turn's end is written (agents/run/runners.py), and a model error leaves the title as it was. Its tokens
are charged to the member's usage like a turn's, and no title is asked for once the month's quota is
used up. The offline model cannot summarise, and a title call may fail: the session is then named from
what its first exchange made and asked for (agents/run/fallback_titles.py)."""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from django.conf import settings

from modes.models import AgentMode

from ..events.channel import session_titled
from ..llm import ModelError, get_llm_client
from ..llm.catalog import model_for
from ..models import Turn
from ..sessions import session_title_generated
from .fallback_titles import fallback_title
from .metering import charge_session_call, session_call_allowed

logger = logging.getLogger("aptix.titles")

TITLE_PROMPT = (
    "Give this conversation a short title of at most six words, in the language of the user's message. "
    "Reply with the title only: no quotes, no full stop."
)
FIRST_TITLE_CHARS = 80  # the title turn_start gives a new session: its first message, cut
EXCERPT_CHARS = 1_500  # of the message and of the answer: a title needs the gist, not the whole
# The reply a title may take: a few words, with room for a model that reasons briefly first. Asked
# for the whole reply room (APTIX_REPLY_TOKENS), a small model that rambles spent up to a reply's worth
# of the model server's time on a name; one cut off here gets the fallback title.
TITLE_TOKENS = 256


def wants_title(turn: Turn) -> bool:
    """Whether the turn is a session's first answer, to be named after (a cheap look at its columns)."""
    return (
        bool(settings.APTIX_AUTO_TITLES)
        and turn.status == Turn.Status.COMPLETED
        and turn.index == 1
        and turn.origin == Turn.Origin.MESSAGE
        and not turn.session.catalog_test  # a catalog test's session is nobody's to read, and deleted at once
    )


async def title_session(turn: Turn) -> str | None:
    """Name the turn's session from its first exchange; the new title, or None (kept as it was)."""
    was = turn.user_message[:FIRST_TITLE_CHARS]
    if turn.session.title != was:  # named already (by the user, or a branch's title)
        return None
    mode_model = await AgentMode.objects.filter(key=turn.mode).values_list("model", flat=True).afirst()
    spec = model_for(session_model=turn.session.model, mode_model=mode_model or "")
    llm = get_llm_client(spec)
    if llm.is_offline:  # it cannot summarise: named from what the exchange made and asked for
        return await _fallback(turn, was)
    member = {"team_id": turn.session.team_id, "user_id": turn.session.user_id}
    if not await sync_to_async(session_call_allowed)(**member):  # the month's quota is used up
        return None
    exchange = f"User: {turn.user_message[:EXCERPT_CHARS]}\n\nAssistant: {turn.answer[:EXCERPT_CHARS]}"
    messages = [{"role": "system", "content": TITLE_PROMPT}, {"role": "user", "content": exchange}]
    try:
        reply = await llm.stream_chat(messages=messages, tools=None, max_tokens=TITLE_TOKENS)
    except ModelError as exc:
        logger.warning("No title for session %s: %s", turn.session_id, exc, extra={"event": "titles.failed"})
        return await _fallback(turn, was)
    await sync_to_async(charge_session_call)(**member, mode=turn.mode, spec=spec, reply=reply)
    title = reply.content.strip().strip("\"'“”‘’").rstrip(".").strip()
    if "\n" in title:
        title = title.splitlines()[0].strip()
    return await _named(turn, was, title)


async def _fallback(turn: Turn, was: str) -> str | None:
    """The title no model gave (agents/run/fallback_titles.py), if it says more than the message did."""
    title = await sync_to_async(fallback_title)(turn)
    if title == was:
        return None
    return await _named(turn, was, title)


async def _named(turn: Turn, was: str, title: str) -> str | None:
    """Write the title unless the session was named meanwhile, and show it on the user's pages at once."""
    written = await sync_to_async(session_title_generated)(session_id=turn.session_id, was=was, title=title)
    if not written:
        return None
    await session_titled(turn.session.user_id, turn.session_id, written)
    return written
