"""Projects' pages (projects/): the list with a form for a new one (/projects/), a project's page
(/projects/<id>/: its sessions, members and instructions, "New session" in it, the edit form; files
and documents come with the next slices), its edit and delete, and the session menu's "Move to
project…". Plain forms that work without JavaScript, answered with a redirect (303) and a message, or
the page again with the reasons (400). A project the user is not a member of is a 404, whoever asks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents.selectors import project_sessions
from agents.sessions import session_set_project
from files.knowledge import index_progress
from modes.catalog import modes_for_team, modes_for_teams
from projects.files import project_file_list
from projects.services import (
    DESCRIPTION_MAX,
    INSTRUCTIONS_MAX,
    NAME_MAX,
    ProjectNotFoundError,
    project_can_manage,
    project_create,
    project_delete,
    project_get,
    project_list,
    project_members,
    project_teams,
    project_update,
)

from .manage import refused_page, see_other
from .sessions import get_session_or_404

WHOLE_TEAM, CHOSEN = "team", "chosen"
ERROR_NO_TEAM = "Choose one of your teams."
NOT_FOUND = "No such project."


class ProjectForm(forms.Form):
    team = forms.ChoiceField(choices=())
    name = forms.CharField(max_length=NAME_MAX)
    description = forms.CharField(max_length=DESCRIPTION_MAX, required=False, widget=forms.Textarea(attrs={"rows": 2}))
    instructions = forms.CharField(
        max_length=INSTRUCTIONS_MAX,
        required=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="Added to every request of the project's sessions, after the mode's prompt.",
    )
    default_mode = forms.ChoiceField(choices=(), required=False, label="Default mode")
    who = forms.ChoiceField(
        choices=((WHOLE_TEAM, "Everyone in the team"), (CHOSEN, "Chosen members")),
        initial=WHOLE_TEAM,
        widget=forms.RadioSelect,
        label="Members",
    )
    members = forms.MultipleChoiceField(choices=(), required=False, widget=forms.CheckboxSelectMultiple, label="")

    def __init__(self, *args: Any, teams: list[Any], modes: list[Any], manage: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choice = self.fields["team"]
        assert isinstance(choice, forms.ChoiceField)
        choice.choices = [(t.slug, t.name) for t in teams]
        mode = self.fields["default_mode"]
        assert isinstance(mode, forms.ChoiceField)
        mode.choices = [("", "The team's default"), *((m.key, m.display_name) for m in modes)]
        people = sorted({p.get_username() for t in teams for p in getattr(t, "people", [])})
        members = self.fields["members"]
        assert isinstance(members, forms.MultipleChoiceField)
        members.choices = [(name, name) for name in people]
        if not manage:  # members are the creator's and the team owners' to change
            del self.fields["who"], self.fields["members"]


def project_or_404(request: HttpRequest, project_id: str) -> Any:
    try:
        return project_get(user=request.user, project_id=project_id)
    except ProjectNotFoundError:
        raise Http404(NOT_FOUND) from None


def _saved(form: ProjectForm, save: Callable[..., Any]) -> Any:
    """What `save(**fields)` returns, or None with the service's reasons on the form."""
    if not form.is_valid():
        return None
    data = dict(form.cleaned_data)
    if "who" in data:
        who, chosen = data.pop("who"), data.pop("members")
        data["members"] = None if who == WHOLE_TEAM else chosen
    try:
        return save(**data)
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
        return None


def _list_page(request: HttpRequest, form: ProjectForm, teams: list[Any], *, status: int = 200) -> HttpResponse:
    context = {"projects": project_list(user=request.user), "form": form, "teams": teams}
    return render(request, "projects/projects.html", context, status=status)


@require_http_methods(["GET", "POST"])
@login_required
def projects_page(request: HttpRequest) -> HttpResponse:
    """The user's projects; a POST makes a new one and opens it."""
    teams = project_teams(user=request.user)
    form = ProjectForm(request.POST or None, teams=teams, modes=modes_for_teams(teams))
    if request.method == "GET":
        return _list_page(request, form, teams)

    def create(team: str, **fields: Any) -> Any:
        chosen = next((t for t in teams if t.slug == team), None)
        if chosen is None:
            raise ValidationError({"team": ERROR_NO_TEAM})
        return project_create(team=chosen, user=request.user, **fields)

    project = _saved(form, create)
    if project is None:
        messages.error(request, "The project was not made. See the form for details.")
        return _list_page(request, form, teams, status=400)
    messages.success(request, f"“{project.name}” was made.")
    return see_other(reverse("project-detail", args=[project.id]))


def _edit_form(request: HttpRequest, project: Any, data: Any = None) -> ProjectForm:
    members = project_members(project=project)
    initial = {
        "team": project.team.slug,
        "name": project.name,
        "description": project.description,
        "instructions": project.instructions,
        "default_mode": project.default_mode,
        "who": WHOLE_TEAM if project.whole_team else CHOSEN,
        "members": [m.get_username() for m in members],
    }
    team = next(t for t in project_teams(user=request.user) if t.pk == project.team_id)
    manage = project_can_manage(user=request.user, project=project)
    return ProjectForm(data, initial=initial, teams=[team], modes=modes_for_team(team), manage=manage)


def _detail_page(request: HttpRequest, project: Any, form: ProjectForm, *, status: int = 200) -> HttpResponse:
    context = {
        "project": project,
        "members": project_members(project=project),
        "sessions": project_sessions(user=request.user, project=project),
        "can_manage": project_can_manage(user=request.user, project=project),
        "files": project_file_list(user=request.user, project=project),
        "form": form,
        "knowledge": _knowledge(project),
    }
    return render(request, "projects/project_detail.html", context, status=status)


def _knowledge(project: Any) -> dict[str, Any]:
    """The knowledge search's documents and how far their indexing is (files/knowledge/)."""
    documents = index_progress(project.pk)
    busy = any(d["state"] in ("pending", "indexing") for d in documents)
    return {"documents": documents, "busy": busy, "passages": sum(d["done"] for d in documents)}


@require_GET
@login_required
def project_knowledge(request: HttpRequest, project_id: str) -> HttpResponse:
    """The project page's knowledge card again: polled (HTMX) while documents are being indexed."""
    project = project_or_404(request, project_id)
    return render(request, "projects/_knowledge.html", {"project": project, "knowledge": _knowledge(project)})


@require_GET
@login_required
def project_detail(request: HttpRequest, project_id: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    return _detail_page(request, project, _edit_form(request, project))


@require_POST
@login_required
def project_edit(request: HttpRequest, project_id: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    form = _edit_form(request, project, request.POST)
    saved = _saved(form, lambda team, **fields: project_update(project=project, user=request.user, **fields))
    if saved is None:
        messages.error(request, "The project was not changed. See the form for details.")
        return _detail_page(request, project_or_404(request, project_id), form, status=400)
    messages.success(request, "Project saved.")
    return see_other(reverse("project-detail", args=[project.id]))


@require_POST
@login_required
def project_delete_view(request: HttpRequest, project_id: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    project_delete(project=project, user=request.user)  # PermissionDenied: a 403 saying who may
    messages.success(request, f"“{project.name}” was deleted; its sessions are under No project.")
    return see_other(reverse("projects"))


@require_POST
@login_required
def session_project_view(request: HttpRequest, session_id: str) -> HttpResponse:
    """The session menu's "Move to project…": `project` a project id, or empty for "No project"."""
    session = get_session_or_404(request, session_id)
    project_id = request.POST.get("project", "")
    project = project_or_404(request, project_id) if project_id else None
    try:
        session_set_project(session=session, user=request.user, project=project)
    except ValidationError as exc:
        return refused_page(request, session, exc)
    messages.success(request, f"Moved to {project.name}." if project else "Moved out of its project.")
    return see_other(reverse("session-detail", args=[session.id]))
