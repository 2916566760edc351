from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from aptix.teams import team_list_for_user
from modes.catalog import active_modes, default_mode_key

from ..forms import SessionCreateForm
from ..llm import describe_provider
from ..sessions import SessionNotFoundError, session_create, session_get, session_list


def _create_form(user, data=None) -> SessionCreateForm:
    return SessionCreateForm(
        data, teams=team_list_for_user(user=user), modes=active_modes(), default_mode=default_mode_key()
    )


@require_GET
@login_required
def home(request):
    context = {
        "sessions": session_list(user=request.user)[:100],
        "form": _create_form(request.user),
        "has_team": team_list_for_user(user=request.user).exists(),
    }
    return render(request, "agents/home.html", context)


@require_POST
@login_required
def session_new(request):
    form = _create_form(request.user, request.POST)
    if form.is_valid():
        try:
            session = session_create(user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return redirect("session-detail", session_id=session.id)
    messages.error(request, "The session could not be created. See the form for details.")
    context = {"sessions": session_list(user=request.user)[:100], "form": form, "has_team": True}
    return render(request, "agents/home.html", context, status=400)


@require_GET
@login_required
def session_detail(request, session_id: str):
    try:
        session = session_get(user=request.user, session_id=session_id)
    except SessionNotFoundError:
        raise Http404("No such session.") from None
    context = {
        "session": session,
        "history": session.mode_history.select_related("user").order_by("created_at", "id"),
        "turns": session.turns.order_by("index"),
        "model": describe_provider(),
    }
    return render(request, "agents/session_detail.html", context)
