"""Settings → Prompts (/settings/prompts/): the user's own prompts and those shared with their teams
(agents/prompts/), a form for a new one, and each prompt's page to edit, stop sharing or delete it
(/settings/prompts/<id>/). A team's shared prompts are read-only to its members; its owners and the
administrators among its members curate them. A refused form comes back with its errors (400); a
prompt the user may read but not change is a 403 saying why; any other id is a 404."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from agents.prompts.selectors import (
    PromptNotFoundError,
    prompt_can_edit,
    prompt_curated_team_ids,
    prompt_curated_teams,
    prompt_get,
    prompt_list,
)
from agents.prompts.services import (
    ERROR_CURATE_FORBIDDEN,
    TEXT_MAX,
    TITLE_MAX,
    prompt_create,
    prompt_delete,
    prompt_share_team,
    prompt_update,
)
from agents.prompts.variables import variables_in

ONLY_ME = ""  # the sharing choice "only me"
FORM_FIELD = {"shared": "share", "team": "share"}  # a service's field → this form's


@dataclass(frozen=True)
class Row:
    """A prompt as the library lists it: its variables, and whether the user may change it."""

    prompt: Any
    variables: list[str]
    editable: bool


class PromptForm(forms.Form):
    title = forms.CharField(max_length=TITLE_MAX, strip=True)
    text = forms.CharField(
        max_length=TEXT_MAX,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="Write {{name}} for a blank to fill when you use it: letters, digits and underscores.",
    )
    share = forms.ChoiceField(choices=(), required=False, label="Who can use it")

    def __init__(self, *args: Any, teams: list[Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["share"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(ONLY_ME, "Only me"), *((t.slug, f"Everyone in {t.name}") for t in teams)]


def _teams(user: Any, prompt: Any = None) -> list[Any]:
    """The teams the form offers to share with: those the user curates (and the prompt's own)."""
    teams = list(prompt_curated_teams(user=user))
    if prompt is not None and prompt.team is not None and prompt.team not in teams:
        teams.append(prompt.team)
    return teams


def _saved(form: PromptForm, save: Callable[..., Any], user: Any) -> Any:
    """Whatever `save(title, text, team)` returns, or None with the service's refusal on the form."""
    if not form.is_valid():
        return None
    data = form.cleaned_data
    try:
        team = prompt_share_team(user=user, slug=data["share"]) if data["share"] else None
        return save(title=data["title"], text=data["text"], team=team)
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            name = FORM_FIELD.get(field, field)
            form.add_error(name if name in form.fields else None, errors)
        return None


def _library(request: HttpRequest, form: PromptForm, *, status: int = 200) -> HttpResponse:
    user = request.user
    curated = prompt_curated_team_ids(user=user)
    own: list[Row] = []
    shared: list[Row] = []
    for prompt in prompt_list(user=user):
        row = Row(prompt, variables_in(prompt.text), prompt_can_edit(user=user, prompt=prompt, curated=curated))
        (shared if prompt.team_id else own).append(row)
    context = {"form": form, "own": own, "shared": shared, "curates_any": bool(curated)}
    return render(request, "agents/prompts.html", context, status=status)


@require_http_methods(["GET", "POST"])
@login_required
def prompt_library(request: HttpRequest) -> HttpResponse:
    """The library; a POST saves a new prompt (Post/Redirect/Get)."""
    form = PromptForm(request.POST or None, teams=_teams(request.user))
    if request.method == "GET":
        return _library(request, PromptForm(teams=_teams(request.user)))
    prompt = _saved(form, lambda **fields: prompt_create(user=request.user, **fields), request.user)
    if prompt is None:
        messages.error(request, "The prompt was not saved. See the form for details.")
        return _library(request, form, status=400)
    messages.success(request, f"“{prompt.title}” was saved.")
    return redirect("settings-prompts")


def _editable(request: HttpRequest, prompt_id: str) -> Any:
    """The prompt the user may change; 404 for one they may not see, 403 for one they may only read."""
    try:
        prompt = prompt_get(user=request.user, prompt_id=prompt_id)
    except PromptNotFoundError:
        raise Http404("No such prompt.") from None
    if not prompt_can_edit(user=request.user, prompt=prompt):
        raise PermissionDenied(ERROR_CURATE_FORBIDDEN.format(team=prompt.team))
    return prompt


@require_http_methods(["GET", "POST"])
@login_required
def prompt_edit(request: HttpRequest, prompt_id: str) -> HttpResponse:
    prompt = _editable(request, prompt_id)
    initial = {"title": prompt.title, "text": prompt.text, "share": prompt.team.slug if prompt.team else ONLY_ME}
    form = PromptForm(request.POST or None, initial=initial, teams=_teams(request.user, prompt))
    if request.method == "POST":
        saved = _saved(form, lambda **fields: prompt_update(user=request.user, prompt=prompt, **fields), request.user)
        if saved is not None:
            messages.success(request, f"“{saved.title}” was saved.")
            return redirect("settings-prompts")
        messages.error(request, "The prompt was not saved. See the form for details.")
    context = {"form": form, "prompt": prompt, "variables": variables_in(prompt.text)}
    return render(request, "agents/prompt_edit.html", context, status=400 if form.errors else 200)


@require_POST
@login_required
def prompt_delete_view(request: HttpRequest, prompt_id: str) -> HttpResponse:
    prompt = _editable(request, prompt_id)
    try:
        prompt_delete(user=request.user, prompt=prompt)
    except ValidationError as exc:  # the right to it was lost since _editable looked
        raise PermissionDenied(" ".join(exc.messages)) from None
    messages.success(request, f"“{prompt.title}” was deleted.")
    return redirect("settings-prompts")
