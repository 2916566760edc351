"""The inbox (/inbox/): what waits for the signed-in user because an automation ran while nobody
watched — approvals its runs need (Approve / Deny resume the run) and notices (Dismiss) — and the
header's bell (`inbox_bell`: the count, polled by every page; session pages also get it pushed over
their websocket, agents/web/consumers.py `badge_count`).

An item is decided by the person whose item it is: the automation's owner or its delegate. The
decision goes through the approvals every page and the API use (agents/approvals.py), inside
agents.submit.turn_submit, so the run resumes on this process's runner (or a worker)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import reswap

from agents.approvals import UserDecision, approval_decide
from agents.submit import turn_submit
from aptix.preferences import preferences_get, preferences_set_notify_inbox
from automations.inbox import approvals_settled, inbox_count, inbox_open, notice_dismiss
from automations.selectors import inbox_item_get

if TYPE_CHECKING:
    from agents.models import Turn
    from automations.models import InboxItem

DECISIONS = {"approve": True, "deny": False}
ANSWERED_IN_SESSION = frozenset({"elicitation", "connect"})  # answered with their own form, on the session page
NOT_YOURS = "Nothing waits in your inbox with this id: it was answered already, or it is not yours."
DECIDED = {True: "Approved: the run goes on.", False: "Denied: the run goes on and the agent is told."}
DECIDED_WAITING = "Recorded. The run waits for its other approvals."


def _item_rows(items: list[InboxItem]) -> list[dict[str, Any]]:
    rows = []
    for item in items:
        approval = item.approval
        arguments = ""
        if approval is not None and approval.arguments:
            try:
                arguments = json.dumps(json.loads(approval.arguments), indent=2, ensure_ascii=False)
            except ValueError:
                arguments = approval.arguments
        rows.append(
            {
                "item": item,
                "approval": approval,
                "arguments": arguments,
                "in_session": approval is not None and approval.kind in ANSWERED_IN_SESSION,
            }
        )
    return rows


@require_GET
@login_required
def inbox_page(request: HttpRequest) -> HttpResponse:
    context = {
        "rows": _item_rows(list(inbox_open(user=request.user))),
        "notify_inbox": preferences_get(user=request.user).notify_inbox,
    }
    return render(request, "automations/inbox.html", context)


@require_GET
def inbox_bell(request: HttpRequest) -> HttpResponse:
    """The bell's count (every page polls it): the badge alone. Signed out: a 401 that swaps nothing."""
    if not request.user.is_authenticated:
        return reswap(HttpResponse("Sign in to see your inbox.", status=401, content_type="text/plain"), "none")
    count = inbox_count(user_id=request.user.pk)
    return HttpResponse(render_to_string("automations/_bell_badge.html", {"inbox_count": count}))


@require_POST
@login_required
async def inbox_decide(request: HttpRequest, item_id: int) -> HttpResponse:
    """Approve or Deny an approval item: recorded, then the run resumes once nothing else is pending."""
    user = await request.auser()
    approve = DECISIONS.get(request.POST.get("decision", ""))
    if approve is None:
        return HttpResponseBadRequest("The decision must be approve or deny.", content_type="text/plain")
    item = await sync_to_async(inbox_item_get)(user=user, item_id=item_id)
    if item is None or item.approval is None:
        raise Http404(NOT_YOURS)
    approval = item.approval

    def record() -> Turn | None:  # the item is this user's (owner or delegate): no session_get here
        turn = approval.turn
        done = approval_decide(turn=turn, decisions=[UserDecision(approval.tool_call_id, approve)], user=user)
        approvals_settled(item.run)
        return turn if done else None

    try:
        submitted = await turn_submit(record)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("inbox")
    messages.success(request, DECIDED[approve] if submitted is not None else DECIDED_WAITING)
    return redirect("inbox")


@require_POST
@login_required
def inbox_dismiss(request: HttpRequest, item_id: int) -> HttpResponse:
    if not notice_dismiss(user=request.user, item_id=item_id):
        raise Http404(NOT_YOURS)
    messages.success(request, "Dismissed.")
    return redirect("inbox")


@require_POST
@login_required
def inbox_notify(request: HttpRequest) -> HttpResponse:
    """The inbox's "Notify me in this browser": the notify_inbox preference (as on the settings page)."""
    on = request.POST.get("notify_inbox") == "on"
    preferences_set_notify_inbox(user=request.user, on=on)
    messages.success(
        request, "This browser will notify you of new items." if on else "No more notifications of new items."
    )
    return redirect("inbox")
