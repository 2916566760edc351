"""The inbox: what waits for a person because an automation ran while nobody watched.

- An approval a paused run needs (a tool call, a mode change, a connection, an MCP server's
  question): one item per person it reaches (the owner; the delegate, when set and still in the
  team), an e-mail with a link to the inbox, and the header's bell counts it live on every page the
  person has open (the user's channel-layer group: agents/web/consumers.py `badge_count`).
- A notice: a run failed, expired or was refused by the quota; the automation paused itself.

Deciding goes through the approvals every page and the API use (agents/approvals.py); an item is
resolved when its approval is decided, its run ends, or (a notice) its reader dismisses it.
The only writer of InboxItem."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone

from agents.events.channel import user_group
from agents.models import ToolApproval
from aptix.models import Membership

from .models import AutomationRun, InboxItem

logger = logging.getLogger("aptix.automations")
KIND_WORDS: dict[str, str] = {
    ToolApproval.Kind.TOOL: "wants to call {tool}",
    ToolApproval.Kind.MODE_CHANGE: "wants to change the mode",
    ToolApproval.Kind.CONNECT: "needs you to connect {server}",
    ToolApproval.Kind.ELICITATION: "has a question from {server}",
}


def inbox_open(*, user: Any) -> QuerySet[InboxItem]:
    """What waits for the user, newest first."""
    return (
        InboxItem.objects.filter(user=user, resolved_at__isnull=True)
        .select_related("automation", "run", "approval")
        .order_by("-created_at", "-id")
    )


def inbox_approvals(*, user: Any) -> list[InboxItem]:
    """The approvals waiting for the user (the API's inbox), newest first."""
    return list(
        inbox_open(user=user)
        .filter(kind=InboxItem.Kind.APPROVAL, approval__isnull=False)
        .select_related("automation", "approval")
    )


def inbox_item_json(item: InboxItem) -> dict[str, Any]:
    """An approval item as the API shows it: what to send back in the approvals body of
    POST /api/v1/agent/execute (`conversationId`, `toolCallId`) and what it is about."""
    approval = item.approval
    assert approval is not None  # inbox_approvals answers approval items only
    return {
        "id": item.pk,
        "automation": {"id": item.automation_id, "name": item.automation.name},
        "runId": item.run_id,
        "turnId": approval.turn_id,
        "conversationId": approval.session_id,
        "toolCallId": approval.tool_call_id,
        "kind": approval.kind,
        "tool": approval.tool,
        "server": approval.server or None,
        "arguments": approval.arguments,
        "text": item.text,
        "since": approval.requested_at.isoformat(),
    }


def inbox_count(*, user_id: Any) -> int:
    return InboxItem.objects.filter(user_id=user_id, resolved_at__isnull=True).count()


def recipients(run: AutomationRun) -> list[Any]:
    """The owner and, when set and still an active member of the team, the delegate."""
    automation = run.automation
    people = [automation.owner]
    delegate = automation.delegate
    if (
        delegate is not None
        and delegate.is_active
        and Membership.objects.filter(team_id=automation.team_id, user=delegate).exists()
    ):
        people.append(delegate)
    return people


def approvals_arrived(run: AutomationRun, pending: Iterable[ToolApproval]) -> None:
    """Items for the pending approvals of a paused run (once per approval and person), each new one
    e-mailed and counted on the person's bell."""
    told: set[Any] = set()
    pending = list(pending)
    known = set(InboxItem.objects.filter(approval__in=pending).values_list("approval_id", "user_id"))
    for approval in pending:
        what = KIND_WORDS.get(approval.kind, "waits for you").format(tool=approval.tool, server=approval.server)
        text = f"{run.automation.name} {what}"
        for person in recipients(run):
            if (approval.pk, person.pk) in known:
                continue  # each tick looks again at a waiting run: its items exist
            try:
                with transaction.atomic():
                    InboxItem.objects.create(
                        user=person,
                        kind=InboxItem.Kind.APPROVAL,
                        automation=run.automation,
                        run=run,
                        approval=approval,
                        text=text[:500],
                    )
            except IntegrityError:
                continue  # an item for this approval and person exists (another process made it)
            _email(person, f"Aptix: {text}", _approval_body(run, approval, text))
            told.add(person.pk)
    for user_id in told:
        bell_push(user_id)


def approvals_settled(run: AutomationRun) -> None:
    """Resolve the run's approval items that were decided, or all of them once the run no longer waits."""
    items = InboxItem.objects.filter(run=run, kind=InboxItem.Kind.APPROVAL, resolved_at__isnull=True)
    if run.status == AutomationRun.Status.AWAITING_APPROVAL:
        items = items.exclude(approval__decision="")
    users = set(items.values_list("user_id", flat=True))
    if users and items.update(resolved_at=timezone.now()):
        for user_id in users:
            bell_push(user_id)


def notice(run: AutomationRun, text: str) -> InboxItem:
    """Tell the owner something went wrong (an item, an e-mail, the bell)."""
    owner = run.automation.owner
    item = InboxItem.objects.create(
        user=owner, kind=InboxItem.Kind.NOTICE, automation=run.automation, run=run, text=text[:500]
    )
    _email(
        owner, f"Aptix: {text[:120]}", f"{text}\n\nThe automation: {_link('automation-detail', run.automation_id)}\n"
    )
    bell_push(owner.pk)
    return item


def notice_dismiss(*, user: Any, item_id: int) -> bool:
    updated = InboxItem.objects.filter(
        pk=item_id, user=user, kind=InboxItem.Kind.NOTICE, resolved_at__isnull=True
    ).update(resolved_at=timezone.now())
    if updated:
        bell_push(user.pk)
    return bool(updated)


def bell_push(user_id: Any) -> None:
    """Send the user's open count to every page they have open (best effort: the bell also polls)."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "badge.count", "badge": "inbox", "count": inbox_count(user_id=user_id)}
    try:
        async_to_sync(layer.group_send)(user_group(user_id), message)
    except Exception:  # a channel layer hiccup costs the live count until the next poll, nothing more
        logger.warning("Could not push the inbox count to user %s", user_id, exc_info=True)


def _link(name: str, *args: Any) -> str:
    return settings.APTIX_PUBLIC_URL + reverse(name, args=args)


def _approval_body(run: AutomationRun, approval: ToolApproval, text: str) -> str:
    arguments = approval.arguments if len(approval.arguments) <= 2000 else approval.arguments[:2000] + "…"
    return (
        f"{text}.\n\nTool: {approval.tool}\nArguments: {arguments}\n\n"
        f"Approve or deny it in your inbox: {_link('inbox')}\n"
        f"The session: {_link('session-detail', run.session_id)}\n\n"
        f"Nobody answering within {run.automation.approval_timeout_hours} h ends the run.\n"
    )


def _email(person: Any, subject: str, body: str) -> None:
    if not person.email:
        return
    try:
        send_mail(subject[:200], body, settings.DEFAULT_FROM_EMAIL, [person.email])
    except Exception:  # the inbox item stands; a mail server's failure is logged, never the run's
        logger.warning("Could not e-mail %s about an automation", person.pk, exc_info=True)
