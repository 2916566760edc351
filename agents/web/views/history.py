"""The session page's timeline, a page of turns at a time.

The page draws the last APTIX_SESSION_PAGE_TURNS turns; a sentinel above them loads the turns before
(`GET /sessions/<id>/history/?before=<turn index>`, htmx on scroll or the "Load earlier turns" button;
without JavaScript the link opens the page from further back, `?since=<turn index>`). So what a page
costs does not grow with the session: its queries are the same few whatever its length, and a finished
turn is drawn from its final state (its row and the events that make its timeline), never from its
model.delta rows or its step.started trace (the last seq and the tokens a stopped step used come from
light queries: `agents.selectors.turn_summaries`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents.selectors import timeline_rows, turn_summaries, turn_version
from agents.sessions import SessionNotFoundError, session_get

from ..timeline import REPLACED_LABELS, render_turn
from ..versions import VersionNav, nav_of

if TYPE_CHECKING:
    from agents.models import AgentSession
    from agents.selectors import TurnVersion

ERROR_BEFORE = "before must be a turn number (a whole number from 1)."
ERROR_SINCE = "since must be a turn number (a whole number from 1)."


def turn_number(value: str | None, error: str) -> int | None:
    """A turn index from the query string (None when absent); ValueError(error) when not one."""
    if value is None:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(error)
    return int(value)


def timeline_page(
    session: AgentSession, *, before: int | None = None, since: int | None = None, request: HttpRequest | None = None
) -> dict[str, Any]:
    """A page of the timeline: the turns (last APTIX_SESSION_PAGE_TURNS, or those before `before`, or all
    from `since`) and the manual mode changes among them, in the order they happened, plus `earlier`:
    the index of the first turn shown when turns before it exist (None when none do)."""
    rows = timeline_rows(session=session, size=page_size(), before=before, since=since)
    turns, events_of = rows.turns, rows.events_of
    light = turn_summaries(turns=[t for t in turns if t.is_finished], events_of=events_of)
    entries: list[dict[str, Any]] = []
    for turn in turns:
        events = events_of[turn.id]
        summary = light.get(turn.id)
        latest = before is None and turn is turns[-1]  # turns before a page are never the newest
        nav = nav_of(turn, rows.versions)
        html = render_turn(
            turn, events, latest=latest, request=request, summary=summary, versions=nav, reader=session.read_only
        )
        seq = summary[0] if summary else (events[-1].seq if events else 0)
        entries.append({"at": turn.created_at, "turn": turn, "html": html, "seq": seq})
    entries += [{"at": change.created_at, "turn": None, "change": change} for change in rows.changes]
    entries.sort(key=lambda e: e["at"])
    earlier = rows.earlier
    return {"timeline": entries, "earlier": earlier, "since": max((earlier or 1) - page_size(), 1)}


def page_size() -> int:
    return settings.APTIX_SESSION_PAGE_TURNS


def timeline_context(
    session: AgentSession, request: HttpRequest | None = None, *, since: int | None = None
) -> dict[str, Any]:
    """The session page's timeline, the stream cursor (the last event shown) and the websocket URL that
    resumes from it."""
    page = timeline_page(session, since=since, request=request)
    last = next((e for e in reversed(page["timeline"]) if e["turn"]), None)
    cursor_turn, cursor_seq = (last["turn"].id, last["seq"]) if last else ("", 0)
    # Always a cursor: a socket without one gets only the open turns (agents/web/consumers.py).
    query = urlencode({"turn": cursor_turn, "seq": cursor_seq})
    return {
        **page,
        "cursor_turn": cursor_turn,
        "cursor_seq": cursor_seq,
        "ws_url": f"/ws/sessions/{session.id}/?{query}",
    }


@require_GET
@login_required
def session_history(request: HttpRequest, session_id: str) -> HttpResponse:
    """The turns before `?before=<turn index>` and the sentinel that loads the ones before those."""
    try:  # the user's own session in one of their teams; anything else is a 404 that says nothing
        session = session_get(user=request.user, session_id=session_id, read=True)
    except SessionNotFoundError:
        raise Http404("No such session.") from None
    try:
        before = turn_number(request.GET.get("before"), ERROR_BEFORE)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    if before is None:
        return HttpResponseBadRequest(ERROR_BEFORE)
    context = {"session": session, **timeline_page(session, before=before, request=request)}
    return render(request, "agents/_timeline_page.html", context)


@require_GET
@login_required
def turn_version_view(request: HttpRequest, session_id: str, turn_id: str, number: int) -> HttpResponse:
    """Version `number` of a message sent again (agents/web/versions.py): that earlier message and the
    turns replaced with it, drawn into the newest version's article; nothing for the newest version,
    which the article shows itself."""
    try:
        session = session_get(user=request.user, session_id=session_id, read=True)
    except SessionNotFoundError:
        raise Http404("No such session.") from None
    version = turn_version(session=session, turn_id=turn_id, number=number)
    if version is None:
        raise Http404("No such version.")
    if not version.turns:
        return HttpResponse("")  # empty, so the article shows its own body again
    turns = _version_turns(version, number=number, slot=turn_id, request=request, reader=session.read_only)
    context = {"turns": turns, "count": version.count}
    replaced_by = version.turns[0].replaced_by
    label = REPLACED_LABELS.get(replaced_by.origin, "Replaced") if replaced_by else "Replaced"
    return render(request, "agents/_turn_version.html", {**context, "number": number, "replaced_label": label})


def _version_turns(
    version: TurnVersion, *, number: int, slot: str, request: HttpRequest, reader: bool = False
) -> list[str]:
    """The version's turns drawn: the first with the message's switcher (version `number` of the
    versions of `slot`), a later one with its own when it was sent again itself."""
    light = turn_summaries(turns=version.turns, events_of=version.events_of)
    head = version.turns[0]
    return [
        render_turn(
            turn,
            version.events_of[turn.id],
            latest=False,
            request=request,
            summary=light.get(turn.id),
            versions=VersionNav(number=number, count=version.count, slot=slot)
            if turn is head
            else nav_of(turn, version.versions),
            reader=reader,
        )
        for turn in version.turns
    ]
