"""Pages of the workspace: the session list (sidebar, see sidebar.py), a new session, and the session view."""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from agents.llm import describe_provider
from agents.models import AgentSession, Turn, TurnEvent
from agents.sessions import SessionNotFoundError, session_create, session_get
from aptix.preferences import preferences_get
from aptix.ratelimits import TURNS, rate_limit, user_key
from aptix.teams import team_list_for_user
from modes.catalog import active_modes, default_mode_key

from ..forms import SessionCreateForm
from ..fragments import mode_context, session_model_context
from ..timeline import render_turn
from ..toolpanel import tool_panel
from .sidebar import sidebar_context


def _create_form(user, data=None) -> SessionCreateForm:
    """The new-session form, starting from the user's defaults (settings page) where they still apply."""
    modes = active_modes()
    preferences = preferences_get(user=user)
    keys = {m.key for m in modes}
    mode = preferences.default_mode if preferences.default_mode in keys else default_mode_key()
    return SessionCreateForm(
        data,
        teams=team_list_for_user(user=user),
        modes=modes,
        default_mode=mode,
        initial={"execution": preferences.default_execution},
    )


def get_session_or_404(request, session_id: str) -> AgentSession:
    """The user's own session in one of their teams; anything else is a 404 that says nothing."""
    try:
        return session_get(user=request.user, session_id=session_id)
    except SessionNotFoundError:
        raise Http404("No such session.") from None


@require_GET
@login_required
def home(request):
    teams = team_list_for_user(user=request.user)
    context = {
        **sidebar_context(request),
        "form": _create_form(request.user),
        "has_team": teams.exists(),
        "teams_count": teams.count(),
        "model": describe_provider(),
    }
    return render(request, "agents/home.html", context)


@require_GET
@login_required
def session_list_view(request):
    context = sidebar_context(request)
    # "Show more" swaps its own list item for the next page's items (and its own "Show more").
    template = "agents/_session_list.html" + ("#session-items" if context["page"] > 1 else "")
    return render(request, template, context)


@require_POST
@login_required
def session_new(request):
    form = _create_form(request.user, request.POST)
    if limited := rate_limit(TURNS, user_key(request.user), request):  # a new conversation counts as a turn
        messages.error(request, limited.message)
        response = _home_again(request, form, status=429)
        response["Retry-After"] = str(limited.retry_after)
        return response
    if form.is_valid():
        try:
            session = session_create(user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return redirect("session-detail", session_id=session.id)
    messages.error(request, "The session could not be created. See the form for details.")
    return _home_again(request, form, status=400)


def _home_again(request, form: SessionCreateForm, *, status: int):
    """The home page again with the posted form, for a session that was not created."""
    teams = team_list_for_user(user=request.user)
    context = {
        **sidebar_context(request),
        "form": form,
        "has_team": teams.exists(),  # a user with no team posting the form gets the page that says so
        "teams_count": teams.count(),
        "model": describe_provider(),
    }
    return render(request, "agents/home.html", context, status=status)


@require_GET
@login_required
def session_detail(request, session_id: str):
    return detail_page(request, get_session_or_404(request, session_id))


def detail_page(request, session: AgentSession, *, status: int = 200):
    """The session page; also the answer to a housekeeping form the server refused (with its reason)."""
    context = {
        **sidebar_context(request, current=session),
        "session": session,
        "children": session.children.filter(user=request.user).order_by("created_at"),
        **session_model_context(session),
        "tools": tool_panel(session),
        # a paused turn leaves the composer free (a new message declines what an approval waits for)
        "busy": session.turns.filter(finished_at__isnull=True).exclude(status__in=Turn.PAUSED_STATUSES).exists(),
        **timeline_context(session, request),
    }
    context.update(mode_context(session, context["catalog"]))
    mode = next((m for m in context["catalog"] if m.key == session.mode), None)
    context["suggestions"] = list(mode.example_utterances[:3]) if mode else []
    return render(request, "agents/session_detail.html", context, status=status)


def timeline_context(session: AgentSession, request=None) -> dict:
    """Turns and manual mode changes in the order they happened, the stream cursor (the last
    event shown) and the websocket URL that resumes from it."""
    # The events first, then the turns: a run writes a turn's final state and its final event in one
    # transaction, so read in this order a turn is never behind its events. (The other way round, a
    # turn ending between the two reads would show as running with its final event already behind
    # the stream cursor: running on screen for ever.) A turn ahead of its events is redrawn by the
    # stream when it replays the events after the cursor.
    events_of: dict[str, list[TurnEvent]] = defaultdict(list)
    for event in TurnEvent.objects.filter(turn__session=session).order_by("seq"):
        events_of[event.turn_id].append(event)
    turns = list(session.turns.order_by("index"))
    entries: list[dict[str, Any]] = []
    for i, turn in enumerate(turns):
        events = events_of[turn.id]
        html = render_turn(turn, events, latest=i == len(turns) - 1, request=request)
        entries.append({"at": turn.created_at, "turn": turn, "html": html, "seq": events[-1].seq if events else 0})
    for change in session.mode_history.filter(turn__isnull=True).select_related("user"):
        entries.append({"at": change.created_at, "turn": None, "change": change})
    entries.sort(key=lambda e: e["at"])
    last = next((e for e in reversed(entries) if e["turn"]), None)
    cursor_turn, cursor_seq = (last["turn"].id, last["seq"]) if last else ("", 0)
    # Always a cursor: a socket without one gets only the open turns (agents/web/consumers.py).
    query = urlencode({"turn": cursor_turn, "seq": cursor_seq})
    return {
        "timeline": entries,
        "cursor_turn": cursor_turn,
        "cursor_seq": cursor_seq,
        "ws_url": f"/ws/sessions/{session.id}/?{query}",
    }
