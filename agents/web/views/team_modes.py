"""The Teams card of the settings page: each of the user's teams with the mode its new sessions start
in. A team's owner (or an administrator) picks it there (HTMX: the card's row is swapped in place;
without JavaScript the form posts and the page is drawn again); a member reads it. The permission is
the service's (modes/teams.py), checked on every post."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from modes.teams import team_default_mode_set, team_default_rows, team_for_default

from .settings import settings_render

ROW_TEMPLATE = "agents/_team_default.html"


@require_POST
@login_required
def team_default_mode(request: HttpRequest, team_slug: str) -> HttpResponse:
    """Set (or clear, with an empty mode) the default mode of one of the user's teams."""
    team = team_for_default(user=request.user, slug=team_slug)
    if team is None:  # not one of the user's teams: as if there were none
        raise Http404("No such team.")
    error, status = "", 200
    try:
        team_default_mode_set(team=team, mode=request.POST.get("mode", ""), user=request.user)
    except PermissionDenied as exc:
        error, status = str(exc), 403
    except ValidationError as exc:
        error, status = " ".join(exc.messages), 400
    if not getattr(
        request, "htmx", False
    ):  # django-htmx's middleware; the form posted without JavaScript: the page again, saying what happened
        if status != 200:
            messages.error(request, error)
            return settings_render(request, status=status)
        messages.success(request, f"The default mode of {team.name} was saved.")
        return redirect("settings")
    row = next(r for r in team_default_rows(user=request.user) if r.team.pk == team.pk)
    return render(request, ROW_TEMPLATE, {"row": row, "error": error, "saved": status == 200}, status=status)
