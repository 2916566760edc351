"""The session page's timeline, a page of turns at a time (issue 17, item 4).

The page draws the last APTIX_SESSION_PAGE_TURNS turns; a sentinel above them loads the turns before
(`GET /sessions/<id>/history/?before=<turn index>`, htmx on scroll or the "Load earlier turns" button;
without JavaScript the link opens the page from further back, `?since=<turn index>`). So what a page
costs does not grow with the session: its queries are the same few whatever its length, and a finished
turn is drawn from its final state (its row and the events that make its timeline), never from its
model.delta rows or its step.started trace (the last seq and the tokens a stopped step used come from
light queries: `summaries`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import IntegerField, Max, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Length
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents.models import AgentSession, Turn, TurnEvent
from agents.sessions import SessionNotFoundError, session_get

from ..timeline import render_turn

# Not loaded for a finished turn: what streamed (its answer has it) and each step's request (the trace).
UNLOADED_WHEN_FINISHED = ("model.delta", "step.started")
ERROR_BEFORE = "before must be a turn number (a whole number from 1)."
ERROR_SINCE = "since must be a turn number (a whole number from 1)."


def turn_number(value: str | None, error: str) -> int | None:
    """A turn index from the query string (None when absent); ValueError(error) when not one."""
    if value is None:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(error)
    return int(value)


def timeline_page(session: AgentSession, *, before: int | None = None, since: int | None = None, request=None) -> dict:
    """A page of the timeline: the turns (last APTIX_SESSION_PAGE_TURNS, or those before `before`, or all
    from `since`) and the manual mode changes among them, in the order they happened, plus `earlier`:
    the index of the first turn shown when turns before it exist (None when none do)."""
    turns_q = session.turns.all() if before is None else session.turns.filter(index__lt=before)
    if since is not None:
        window = list(turns_q.filter(index__gte=since).order_by("-index").values_list("id", "index", "created_at"))
    else:
        window = list(turns_q.order_by("-index").values_list("id", "index", "created_at")[: page_size()])
    window.reverse()
    ids = [turn_id for turn_id, _, _ in window]
    first = window[0][1] if window else before
    earlier = first if first is not None and session.turns.filter(index__lt=first).exists() else None
    # The events first, then the turns: a run writes a turn's final state and its final event in one
    # transaction, so read in this order a turn is never behind its events. (The other way round, a
    # turn ending between the two reads would show as running with its final event already behind
    # the stream cursor: running on screen for ever.) A turn ahead of its events is redrawn by the
    # stream when it replays the events after the cursor. A finished turn's deltas and step traces
    # are left out in the same statement that reads its status.
    events_of: dict[str, list[TurnEvent]] = defaultdict(list)
    finished_heavy = Q(turn__status__in=Turn.FINAL_STATUSES, type__in=UNLOADED_WHEN_FINISHED)
    for event in TurnEvent.objects.filter(turn_id__in=ids).exclude(finished_heavy).order_by("turn_id", "seq"):
        events_of[event.turn_id].append(event)
    turns = list(
        Turn.objects.filter(pk__in=ids)
        .select_related("replaced_by")
        .defer("trace", "state", "replaced_by__trace", "replaced_by__state")
        .order_by("index")
    )
    light = summaries([t for t in turns if t.is_finished], events_of)
    entries: list[dict[str, Any]] = []
    for turn in turns:
        events = events_of[turn.id]
        summary = light.get(turn.id)
        latest = before is None and turn is turns[-1]  # turns before a page are never the newest
        html = render_turn(turn, events, latest=latest, request=request, summary=summary)
        seq = summary[0] if summary else (events[-1].seq if events else 0)
        entries.append({"at": turn.created_at, "turn": turn, "html": html, "seq": seq})
    changes = session.mode_history.filter(turn__isnull=True).select_related("user")
    if earlier is not None and window:
        changes = changes.filter(created_at__gte=window[0][2])
    if before is not None:
        after = session.turns.filter(index__gte=before).order_by("index").values_list("created_at", flat=True).first()
        changes = changes.filter(created_at__lt=after) if after else changes
    entries += [{"at": change.created_at, "turn": None, "change": change} for change in changes]
    entries.sort(key=lambda e: e["at"])
    return {"timeline": entries, "earlier": earlier, "since": max((earlier or 1) - page_size(), 1)}


def page_size() -> int:
    return settings.APTIX_SESSION_PAGE_TURNS


def summaries(turns: list[Turn], events_of: dict[str, list[TurnEvent]]) -> dict[str, tuple[int, int]]:
    """(last seq, unreported tokens) of each finished turn, from light queries: the turns' highest seq,
    their steps' seq and request size (no payload), and for a turn whose last step has no model reply
    (stopped mid-stream) the length of what streamed after it, summed by the database."""
    if not turns:
        return {}
    ids = [t.id for t in turns]
    last = dict(
        TurnEvent.objects.filter(turn_id__in=ids).values("turn_id").annotate(m=Max("seq")).values_list("turn_id", "m")
    )
    steps: dict[str, tuple[int, int]] = {}
    step_rows = (
        TurnEvent.objects.filter(turn_id__in=ids, type="step.started")
        .annotate(tokens=Cast(KT("payload__tokens"), IntegerField()))
        .values_list("turn_id", "seq", "tokens")
    )
    for turn_id, seq, tokens in step_rows:
        if seq > steps.get(turn_id, (0, 0))[0]:
            steps[turn_id] = (seq, tokens or 0)
    result = {}
    for turn in turns:
        result[turn.id] = (last.get(turn.id, 0), unreported(turn.id, steps.get(turn.id), events_of[turn.id]))
    return result


def unreported(turn_id: str, step: tuple[int, int] | None, events: list[TurnEvent]) -> int:
    """timeline.unreported_tokens without the delta rows: the last step's request size and the text
    streamed after it (or after its last retry), when no model reply came for that step."""
    if step is None:
        return 0
    seq, tokens = step
    after = [e for e in events if e.seq > seq]
    if any(e.type == "model.message" for e in after):
        return 0
    since = max([seq, *(e.seq for e in after if e.type == "model.retry")])
    chars = TurnEvent.objects.filter(turn_id=turn_id, type="model.delta", seq__gt=since).aggregate(
        n=Sum(Length(KT("payload__text")))
    )["n"]
    return tokens + (max(1, (chars + 3) // 4) if chars else 0)  # as llm.protocol.estimate_tokens counts


def timeline_context(session: AgentSession, request=None, *, since: int | None = None) -> dict:
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
def session_history(request, session_id: str):
    """The turns before `?before=<turn index>` and the sentinel that loads the ones before those."""
    try:  # the user's own session in one of their teams; anything else is a 404 that says nothing
        session = session_get(user=request.user, session_id=session_id)
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
