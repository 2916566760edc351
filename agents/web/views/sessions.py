"""Pages of the workspace: the session list (sidebar, see sidebar.py), the home page's composer (a new
session starts with its first message), and the session view."""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from agents.attachments import CODE_NO_FILE, MAX_FILES_PER_MESSAGE
from agents.conversations import session_start
from agents.llm import describe_provider
from agents.selectors import session_busy, session_children
from agents.sessions import SessionNotFoundError, session_get
from agents.sharing.links import DEFAULT_DAYS, LINK_DAYS, public_links_on, share_link_session_list
from agents.submit import turn_submit
from agents.turns import error_code
from aptix.preferences import preferences_get
from aptix.ratelimits import TURNS, rate_limit, user_key
from aptix.teams import team_list_for_user
from files.models import SessionFile
from files.project_files import session_deleted_project_files, session_project_files_named
from files.services import file_describe, file_get, session_files
from modes.catalog import default_mode_for_team, mode_usable, modes_for_team, modes_for_teams, team_catalogs
from projects.services import ProjectNotFoundError, project_get, project_list
from usage.quotas import quota_state

from ..document_panel import PANEL_TEMPLATE, panel_context
from ..forms import SessionCreateForm
from ..fragments import mode_context, session_model_context
from ..toolpanel import tool_panel
from .history import ERROR_SINCE, timeline_context, turn_number
from .sidebar import sidebar_context

if TYPE_CHECKING:
    from agents.models import AgentSession, Turn


def _create_form(user: Any, data: QueryDict | None = None, project: Any = None) -> SessionCreateForm:
    """The new-session form, starting from the user's defaults (settings page) where they still apply;
    in a `project` (its page's "New session"), from the project's team and default mode."""
    teams = team_list_for_user(user=user)
    # Team catalogs: the modes the user's teams may use (one team: exactly its catalog); the service
    # refuses a mode the chosen team cannot use. The preselected mode is the user's default where their
    # (first) team may use it, else that team's default, else the catalog's (AGN-011 §3.1).
    modes = modes_for_teams(teams)
    first = teams.first()
    preferences = preferences_get(user=user)
    preferred = preferences.default_mode
    mode = preferred if preferred and mode_usable(preferred, first) else default_mode_for_team(first)
    initial = {"execution": preferences.default_execution}
    if project is not None:
        mode = (
            project.default_mode
            if mode_usable(project.default_mode, project.team)
            else default_mode_for_team(project.team)
        )
        initial.update(team=project.team_id, project=project.id)
    return SessionCreateForm(data, teams=teams, modes=modes, default_mode=mode, initial=initial)


def get_session_or_404(request: HttpRequest, session_id: str, *, read: bool = False) -> AgentSession:
    """The user's own session in one of their teams; with `read`, also one a teammate shared with
    their team (marked `read_only`). A shared session asked for anything else is a 403 saying why
    (SessionReadOnlyError, a PermissionDenied: templates/403.html); any other id is a 404 that says
    nothing."""
    try:
        return session_get(user=request.user, session_id=session_id, read=read)
    except SessionNotFoundError:
        raise Http404("No such session.") from None


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The composer of a new session (mode and Ask/Agent beside it). Nothing is created until a send.
    `?project=<id>` (a project page's "New session"): the session starts in that project."""
    project = _project(request, request.GET.get("project", ""))
    return _home_page(request, _create_form(request.user, project=project), project=project)


def _project(request: HttpRequest, project_id: str) -> Any:
    """The user's project with this id, None for none asked, a 404 for anyone else's."""
    if not project_id:
        return None
    try:
        return project_get(user=request.user, project_id=project_id)
    except ProjectNotFoundError:
        raise Http404("No such project.") from None


def _home_page(
    request: HttpRequest, form: SessionCreateForm, *, status: int = 200, project: Any = None
) -> HttpResponse:
    """The home page; again with the posted form (the draft and the reason) when nothing was sent."""
    teams = team_list_for_user(user=request.user)
    user_id = cast(int, request.user.pk)  # signed in (login_required)
    context = {
        **sidebar_context(request, whole_page=True),
        "form": form,
        "project": project,
        "has_team": teams.exists(),  # a user with no team posting the form gets the page that says so
        "teams_count": teams.count(),
        "model": describe_provider(),
        "attached": _attached(request),
        # Each team's monthly quota at 80% or more: a notice under the composer, as on a session's page.
        "quotas": [q for team in teams if (q := quota_state(team_id=team.pk, user_id=user_id)) and q.near],
    }
    if context["teams_count"] > 1:  # the mode select follows the team select (static/js/aptix.js)
        context["mode_teams"], context["team_default_modes"] = team_catalogs(teams)
    return render(request, "agents/home.html", context, status=status)


def _attached(request: HttpRequest) -> str:
    """The files a refused first message carried (the user's own), for the page's chips as JSON."""
    found = []
    for file_id in request.POST.getlist("files")[:MAX_FILES_PER_MESSAGE]:
        try:
            found.append(file_describe(file_get(request.user, file_id)))
        except SessionFile.DoesNotExist:
            continue
    return json.dumps([{k: f[k] for k in ("fileId", "name", "size")} for f in found]) if found else ""


@require_GET
@login_required
def session_list_view(request: HttpRequest) -> HttpResponse:
    context = sidebar_context(request)
    # "Show more" swaps its own list item for the next page's items (and its own "Show more").
    template = "agents/_session_list.html" + ("#session-items" if context["page"] > 1 else "")
    return render(request, template, context)


@require_POST
@login_required
async def session_new(request: HttpRequest) -> HttpResponse:
    """Composer-first: the home page's first send creates the session and its first turn together
    (agents/conversations.py), then opens the session, where the answer streams. Bad input or a rate
    limit writes nothing and shows the home page again with the draft and the reason."""
    form = await sync_to_async(_checked_form)(request)
    if isinstance(form, HttpResponse):
        return form
    data = dict(form.cleaned_data)
    data["project"] = await sync_to_async(_project)(request, data.pop("project", ""))
    try:
        submitted = await turn_submit(
            partial(
                _first_turn, user=request.user, text=data.pop("message"), files=request.POST.getlist("files"), **data
            )
        )
    except ValidationError as exc:
        if error_code(exc) == CODE_NO_FILE:  # anyone else's file is a 404, as everywhere
            raise Http404("No such file.") from None
        return await sync_to_async(_refused)(request, form, exc)
    return redirect("session-detail", session_id=submitted.turn.session_id)


def _checked_form(request: HttpRequest) -> SessionCreateForm | HttpResponse:
    """The posted form when it may start a session; else the home page again, saying why."""
    form = _create_form(request.user, request.POST)
    if limited := rate_limit(TURNS, user_key(request.user), request):  # a first message counts as a turn
        messages.error(request, limited.message)
        response = _home_page(request, form, status=429)
        response["Retry-After"] = str(limited.retry_after)
        return response
    if form.is_valid():
        return form
    return _nothing_sent(request, form)


def _first_turn(**fields: Any) -> Turn:
    _session, turn = session_start(**fields)
    return turn


def _refused(request: HttpRequest, form: SessionCreateForm, exc: ValidationError) -> HttpResponse:
    _form_errors(form, exc)
    return _nothing_sent(request, form)


def _nothing_sent(request: HttpRequest, form: SessionCreateForm) -> HttpResponse:
    messages.error(request, "Nothing was sent: see the reason under the message.")
    return _home_page(request, form, status=400, project=_project(request, request.POST.get("project", "")))


def _form_errors(form: SessionCreateForm, exc: ValidationError) -> None:
    """The service's reasons next to the fields they name (the others above the form)."""
    errors: dict[str, list[str]] = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
    for name, reasons in errors.items():
        form.add_error(name if name in form.fields else None, reasons)


@require_GET
@login_required
def session_detail(request: HttpRequest, session_id: str) -> HttpResponse:
    session = get_session_or_404(request, session_id, read=True)
    try:  # ?since=<turn index>: the page from that turn on (the "Load earlier turns" link without JavaScript)
        since = turn_number(request.GET.get("since"), ERROR_SINCE)
    except ValueError as exc:
        return HttpResponseBadRequest(str(exc))
    return detail_page(request, session, since=since)


def detail_page(
    request: HttpRequest, session: AgentSession, *, status: int = 200, since: int | None = None
) -> HttpResponse:
    """The session page (its last turns: history.py); also the answer to a housekeeping form the server
    refused (with its reason). A session shared with the user to read (`read_only`) is drawn without
    its composer, settings, tools and buttons, with "Continue as my copy"."""
    reader = session.read_only  # a teammate reading a shared session: no composer, tools or quota
    # The timeline (and the stream cursor, its last event) is read before the composer's state: a turn
    # that ends in between then shows busy only while its end is still after the cursor, which the
    # socket replays and which redraws the composer idle. Read the other way round, a busy composer
    # could sit behind a cursor that already covers the end, and nothing would free it.
    timeline = timeline_context(session, request, since=since)
    context = {
        **sidebar_context(request, current=session, whole_page=True),
        "session": session,
        "children": session_children(session=session, user=request.user),
        **session_model_context(session),
        "tools": None if reader else tool_panel(session),
        "files": session_files(session.id),
        # Its project's files (for a member of the project only), and those deleted since it began.
        "project_files": session_project_files_named(session.id, request.user.pk),
        "gone_project_files": session_deleted_project_files(session.id, request.user.pk),
        "busy": session_busy(session=session),
        # The month's quota at 80% or more: a notice under the composer (usage/quotas.py).
        "quota": None if reader else quota_state(team_id=session.team_id, user_id=session.user_id),
        # The session menu's share links (its author's): those that still work, and what a new one may be.
        "share_links": [] if reader else share_link_session_list(user=request.user, session=session),
        "link_days": LINK_DAYS,
        "link_default_days": DEFAULT_DAYS,
        "public_links": public_links_on(),
        # The session menu's "Move to project…": the projects of the session's team the user is in.
        "projects": [] if reader else list(project_list(user=request.user, team=session.team)),
        **timeline,
    }
    context.update(mode_context(session, modes_for_team(session.team_id)))
    panel = panel_context(session)  # the most recently changed document, at its current version
    context.update(document_panel=render_to_string(PANEL_TEMPLATE, panel), has_documents=bool(panel["documents"]))
    mode = next((m for m in context["catalog"] if m.key == session.mode), None)
    context["suggestions"] = list(mode.example_utterances[:3]) if mode else []
    return render(request, "agents/session_detail.html", context, status=status)
