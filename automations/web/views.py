"""The automations' pages: the list (/automations/), the new and edit forms, the detail page with
its runs, and its buttons (Run now, Pause/Resume, Delete). Each view parses, calls a service or a
selector, and renders; anyone else's automation (another user's, another team's) is a 404, as in
automations/services.py `automation_get`. The inbox's pages are in inbox_views.py."""

from __future__ import annotations

from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents.submit import turn_submit
from aptix.shown_once import show_once, take_once
from aptix.teams import team_list_for_user
from automations.models import Automation, AutomationRun
from automations.runs import run_begin, run_claim
from automations.selectors import last_runs, run_get, runs_of
from automations.services import (
    AutomationNotFoundError,
    automation_create,
    automation_delete,
    automation_get,
    automation_pause,
    automation_resume,
    automation_update,
    automations_of,
)
from automations.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER

from .forms import AutomationForm, form_initial
from .inbox_views import inbox_bell, inbox_decide, inbox_dismiss, inbox_notify, inbox_page

__all__ = [
    "automation_detail",
    "automation_edit",
    "automation_list",
    "automation_new",
    "automation_remove",
    "automation_run_now",
    "automation_toggle",
    "inbox_bell",
    "inbox_decide",
    "inbox_dismiss",
    "inbox_notify",
    "inbox_page",
]

NEW_SECRET = "automation_webhook_secret"  # a webhook's secret, shown once after the redirect (aptix/shown_once.py)
NO_TEAM = "You are not a member of any team: ask an administrator to add you before making automations."
RUN_SKIPPED = "Not run: its previous run is still going (overlap: skip). Try again when it ends."
RUN_STARTED = "Started a run: it shows below; its session has the answer."
RUN_QUEUED = "Queued: it starts when the previous run ends (overlap: queue)."
RUN_REFUSED = "The run could not start: {error}"


def _own(request: HttpRequest, automation_id: str) -> Automation:
    try:
        return automation_get(user=request.user, automation_id=automation_id)
    except AutomationNotFoundError:
        raise Http404("No such automation.") from None


@require_GET
@login_required
def automation_list(request: HttpRequest) -> HttpResponse:
    automations = list(automations_of(user=request.user))
    latest = last_runs(automations=automations)
    rows = [(automation, latest.get(automation.pk)) for automation in automations]
    has_team = team_list_for_user(user=request.user).exists()
    return render(request, "automations/list.html", {"rows": rows, "has_team": has_team, "no_team": NO_TEAM})


@require_http_methods(["GET", "POST"])
@login_required
def automation_new(request: HttpRequest) -> HttpResponse:
    team = team_list_for_user(user=request.user).first()
    if team is None:
        return render(request, "automations/form.html", {"no_team": NO_TEAM}, status=403)
    form = AutomationForm(request.POST or None, user=request.user, team=team)
    if request.method == "POST" and form.is_valid():
        try:
            automation, secret = automation_create(user=request.user, team=team, data=form.as_input())
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            if secret:
                show_once(request, NEW_SECRET, {"id": automation.pk, "secret": secret})
            messages.success(request, f"The automation “{automation.name}” was created.")
            return redirect("automation-detail", automation.pk)
    form.mark_invalid()
    status = 400 if request.method == "POST" else 200
    return render(request, "automations/form.html", {"form": form, "team": team}, status=status)


@require_http_methods(["GET", "POST"])
@login_required
def automation_edit(request: HttpRequest, automation_id: str) -> HttpResponse:
    automation = _own(request, automation_id)
    form = AutomationForm(
        request.POST or None,
        initial=form_initial(automation),
        user=request.user,
        team=automation.team,
        automation=automation,
    )
    if request.method == "POST" and form.is_valid():
        try:
            data = form.as_input(unchanged_from=automation)
            automation, secret = automation_update(user=request.user, automation=automation, data=data)
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            if secret:
                show_once(request, NEW_SECRET, {"id": automation.pk, "secret": secret})
            messages.success(request, "Your changes were saved.")
            return redirect("automation-detail", automation.pk)
    form.mark_invalid()
    context = {"form": form, "team": automation.team, "automation": automation}
    return render(request, "automations/form.html", context, status=400 if request.method == "POST" else 200)


@require_GET
@login_required
def automation_detail(request: HttpRequest, automation_id: str) -> HttpResponse:
    automation = _own(request, automation_id)
    new = take_once(request, NEW_SECRET)  # just created (or its webhook just turned on): the secret, this once
    secret = new["secret"] if new and new.get("id") == automation.pk else None
    context = {
        "automation": automation,
        "runs": runs_of(automation=automation),
        "secret": secret,
        "trigger_url": settings.APTIX_PUBLIC_URL + reverse("api-automation-trigger", args=[automation.pk]),
        "timestamp_header": TIMESTAMP_HEADER,
        "signature_header": SIGNATURE_HEADER,
    }
    return render(request, "automations/detail.html", context)


@require_POST
@login_required
async def automation_run_now(request: HttpRequest, automation_id: str) -> HttpResponse:
    """Run now: a manual run claimed (skipped while the previous one goes, with overlap "skip"), begun
    as the owner's turn and dispatched on this process's runner."""
    user = await request.auser()
    automation = await _aown(user, automation_id)
    run = await _claim(automation)
    if run.status == AutomationRun.Status.SKIPPED:
        messages.warning(request, RUN_SKIPPED)
    elif await turn_submit(partial(run_begin, run)) is not None:
        messages.success(request, RUN_STARTED)
    else:  # not begun: waiting behind the run still going (overlap "queue"), or refused as it began
        run = await sync_to_async(run_get)(run_id=run.pk) or run
        if run.status == AutomationRun.Status.QUEUED:
            messages.info(request, RUN_QUEUED)
        else:
            messages.error(request, RUN_REFUSED.format(error=run.error or "it ended before it began."))
    return redirect("automation-detail", automation.pk)


async def _aown(user: Any, automation_id: str) -> Automation:
    try:
        return await sync_to_async(automation_get)(user=user, automation_id=automation_id)
    except AutomationNotFoundError:
        raise Http404("No such automation.") from None


async def _claim(automation: Automation) -> AutomationRun:
    run = await sync_to_async(run_claim)(automation, trigger=AutomationRun.Trigger.MANUAL)
    assert run is not None  # a manual run has no scheduled time to lose to another process
    return run


@require_POST
@login_required
def automation_toggle(request: HttpRequest, automation_id: str) -> HttpResponse:
    """Pause (its schedule and webhook stop) or Resume (its next time is computed anew)."""
    automation = _own(request, automation_id)
    if automation.enabled:
        automation_pause(automation=automation, by=request.user)
        messages.success(request, f"“{automation.name}” is paused: its schedule and webhook run nothing.")
    else:
        automation_resume(automation=automation, by=request.user)
        messages.success(request, f"“{automation.name}” is running again.")
    return redirect("automation-detail", automation.pk)


@require_POST
@login_required
def automation_remove(request: HttpRequest, automation_id: str) -> HttpResponse:
    automation = _own(request, automation_id)
    name = automation.name
    automation_delete(automation=automation, by=request.user)
    messages.success(request, f"The automation “{name}” was deleted; its runs' sessions stay.")
    return redirect("automations")
