"""Share links (agents/sharing/links.py): made from the session menu by the session's author, listed
and revoked under Settings → Shared (/settings/shared/), and opened at /s/<secret>/.

A link's page is a static snapshot of the session, drawn as a team reader sees it (no composer, no
buttons that act, no sidebar, no websocket), with `noindex` in a meta tag and an `X-Robots-Tag`
header. Every request to /s/ is counted per client address (APTIX_RATE_SHARE_LINKS, 429 past it), as
invitation links are. A link nobody may open (unknown, a public one while public links are off, a
team link for someone outside the team) is the 404 of any missing page; a revoked or expired link, or
one whose session was deleted, says so (410) and shows nothing of the session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from agents.selectors import timeline_rows, turn_summaries
from agents.sharing.links import (
    DEFAULT_DAYS,
    LINK_DAYS,
    share_link_admits,
    share_link_create,
    share_link_get,
    share_link_list,
    share_link_open,
    share_link_opened,
    share_link_revoke,
)
from aptix.ratelimits import SHARE_LINKS, address_key, rate_limit
from aptix.shown_once import show_once, take_once

from ..timeline import Snapshot, render_turn
from .manage import see_other
from .sessions import get_session_or_404

if TYPE_CHECKING:
    from agents.models import ShareLink

NEW_LINK = "new_share_link"  # the key of a new link's address, shown once (aptix/shown_once.py)
LINK_GONE = "No such link: it was revoked or expired already, or it is not yours."
PAGE = "agents/share_link.html"
KINDS = (("team", "Team members, signed in"), ("public", "Anyone with the link, without signing in"))


class ShareLinkForm(forms.Form):
    kind = forms.ChoiceField(choices=KINDS, initial="team")
    days = forms.TypedChoiceField(choices=[(d, f"{d} days") for d in LINK_DAYS], coerce=int, initial=DEFAULT_DAYS)
    include_tools = forms.BooleanField(required=False)
    include_files = forms.BooleanField(required=False)


@require_POST
@login_required
def share_link_create_view(request: HttpRequest, session_id: str) -> HttpResponse:
    """Make a link to the session (its author only: a reader gets a 403, anyone else a 404); its
    address is shown once on Settings → Shared (Post/Redirect/Get)."""
    session = get_session_or_404(request, session_id)
    form = ShareLinkForm(request.POST)
    if not form.is_valid():
        messages.error(request, "No link was made: choose who it is for and how long it lasts.")
        return see_other(reverse("session-detail", args=[session.id]))
    try:
        link, secret = share_link_create(session=session, user=request.user, **form.cleaned_data)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return see_other(reverse("session-detail", args=[session.id]))
    url = request.build_absolute_uri(reverse("share-link", args=[secret]))
    show_once(request, NEW_LINK, {"id": link.pk, "url": url})
    return see_other(reverse("settings-shared") + "#new-link")


@require_GET
@login_required
def settings_shared(request: HttpRequest) -> HttpResponse:
    """The user's working links, each with Revoke; a link made just now with its address, this once."""
    new = take_once(request, NEW_LINK)
    created = share_link_get(user=request.user, link_id=new["id"]) if new else None
    context = {"links": share_link_list(user=request.user), "created": created, "url": new["url"] if created else ""}
    return render(request, "agents/settings_shared.html", context)


@require_POST
@login_required
def share_link_revoke_view(request: HttpRequest, link_id: str) -> HttpResponse:
    """Revoke a link: it is refused from now on (back to the session's page when revoked from its menu)."""
    link = share_link_revoke(user=request.user, link_id=link_id)
    if link is None:
        messages.error(request, LINK_GONE)
        return render(request, "agents/settings_shared.html", {"links": share_link_list(user=request.user)}, status=404)
    messages.success(request, "The link was revoked: it shows nothing any more.")
    if request.POST.get("back") == "session":
        return see_other(reverse("session-detail", args=[link.session_id]))
    return see_other(reverse("settings-shared"))


@require_GET
@never_cache
def share_link_page(request: HttpRequest, secret: str) -> HttpResponse:
    """The link's read-only snapshot of its session; a signed-out visitor of a team link is sent to sign
    in, then back."""
    limited = rate_limit(SHARE_LINKS, address_key(request), request)
    if limited is not None:
        response = _noindex(render(request, PAGE, {"error": limited.message}, status=429))
        response["Retry-After"] = str(limited.retry_after)
        return response
    try:
        link = share_link_open(secret=secret)
    except ValidationError as exc:
        if exc.error_list[0].code == "unknown":
            raise Http404("No such link.") from None
        return _noindex(render(request, PAGE, {"error": " ".join(exc.messages)}, status=410))
    if not share_link_admits(link=link, user=request.user):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        raise Http404("No such link.")
    share_link_opened(link=link)
    return _noindex(render(request, PAGE, snapshot_context(link, request)))


def snapshot_context(link: ShareLink, request: HttpRequest) -> dict[str, Any]:
    """The session's turns (all of them: the page is not paged) as a team reader sees them, drawn for
    the link (timeline.py's Snapshot), and the manual mode changes among them."""
    session = link.session
    session.read_only = True
    shown = Snapshot(tools=link.include_tools, files=link.include_files)
    rows = timeline_rows(session=session, size=0, since=1)
    light = turn_summaries(turns=[t for t in rows.turns if t.is_finished], events_of=rows.events_of)
    entries: list[dict[str, Any]] = [
        {
            "at": turn.created_at,
            "turn": turn,
            "html": render_turn(
                turn, rows.events_of[turn.id], latest=False, request=request, summary=light.get(turn.id), snapshot=shown
            ),
        }
        for turn in rows.turns
    ]
    entries += [{"at": change.created_at, "turn": None, "change": change} for change in rows.changes]
    entries.sort(key=lambda e: e["at"])
    return {"link": link, "session": session, "timeline": entries, "snapshot": shown}


def _noindex(response: HttpResponse) -> HttpResponse:
    """Search engines keep a link's page (and what it says of a dead link) out of their index, and
    no page it links to learns its address."""
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"  # the page's address is the link's secret
    return response
