"""Turns that come with more than a message, each written in one transaction (a failure leaves nothing):

- `session_start`: composer-first. The home page's first send creates the session *and* its first
  turn, so no session exists without a message (no empty "Session 0037…" in the sidebar).
- `turn_resend`: an earlier message sent again — edited (`edit`), after a failed or stopped turn
  (`retry`), or for another answer to the last message (`regenerate`). The new turn is appended; the
  turn sent again and every later one are marked `replaced_by` it. Replaced turns are not deleted or
  rewritten: they stay for the audit (the admin, their events, ModeHistory, tool approvals), the page
  shows them as the message's earlier versions (agents/web/versions.py), and they are no longer part
  of the conversation the model sees
  (agents/run/context.py). The new turn runs like any new turn (AGN-011 §3.3): in the session's
  persisted mode and execution with the session's tools, not in those of the turn it replaces; a mode
  change made by a replaced turn stays, as its ModeHistory row says.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from projects.models import Project

from .models import AgentSession, Turn
from .sessions import session_create
from .turns import CODE_INVALID, turn_start

logger = logging.getLogger("aptix.sessions")

Origin = Turn.Origin
Status = Turn.Status
RESEND_KINDS = (Origin.EDIT, Origin.RETRY, Origin.REGENERATE)
# What may be sent again as it was: a failed or stopped turn is retried, an answer regenerated.
AGAIN_FROM: dict[str, frozenset[str]] = {
    Origin.RETRY: frozenset({Status.FAILED, Status.CANCELLED}),
    Origin.REGENERATE: frozenset({Status.COMPLETED, Status.LIMIT_REACHED}),
}

ERROR_BAD_KIND = "Send again as 'edit', 'retry' or 'regenerate'."
ERROR_NO_TURN = "That turn is not in this session, or an edit, retry or regenerate already replaced it."
ERROR_NOT_LAST = "Only the last turn can be retried or regenerated; edit an earlier message instead."
ERROR_NOT_RETRYABLE = "Only a failed or stopped turn can be retried."
ERROR_NOT_REGENERABLE = "Only a finished answer can be regenerated (a failed or stopped turn is retried)."
CODE_NOT_LAST = "not_last"


def session_start(
    *,
    team: Any,
    user: Any,
    text: str,
    mode: str | None = None,
    execution: str = "ask",
    title: str = "",
    choice: dict[str, Any] | None = None,
    files: list[str] | None = None,
    resources: list[dict[str, str]] | None = None,
    project: Project | None = None,
    origin: str = "",
) -> tuple[AgentSession, Turn]:
    """A new session (session_create) and its first turn (turn_start, queued), or neither: bad input
    (an empty message, an unknown mode…) raises ValidationError naming the field and writes nothing.
    Callers authorise first (the user's own team) and dispatch the turn's run (agents/submit.py).
    The home page's composer and the JSON API both start a conversation here; `files` (ids of the
    user's uploads) are attached to the new session with the first message; `project` (one of the
    user's, in `team`) is the project the session starts in; `origin` where a program's came from."""
    with transaction.atomic():
        session = session_create(
            team=team, user=user, mode=mode, execution=execution, title=title, project=project, origin=origin
        )
        turn = turn_start(session=session, text=text, choice=choice, files=files, resources=resources)
    return session, turn


def turn_resend(*, session: AgentSession, turn_id: str, kind: str, text: str = "") -> Turn:
    """Send turn `turn_id`'s message again as a new turn (queued; the caller dispatches its run):
    `edit` with `text` instead (any turn not replaced yet), `retry` (the last turn, failed or stopped)
    or `regenerate` (the last turn, finished). A retry or regenerate keeps the message's answer to a
    mode proposal (its `choice`); an edited message is typed, so it carries none. The rules of
    turn_start apply (no turn running; a turn waiting for approvals is declined first)."""
    if kind not in RESEND_KINDS:
        raise ValidationError({"kind": ValidationError(ERROR_BAD_KIND, code=CODE_INVALID)})
    with transaction.atomic():
        locked = AgentSession.objects.select_for_update().get(pk=session.pk)
        target = locked.turns.filter(pk=turn_id, replaced_by__isnull=True).first()
        if target is None:
            raise ValidationError({"turn": ValidationError(ERROR_NO_TURN, code=CODE_INVALID)})
        if kind == Origin.EDIT:
            message, choice = text, None
        else:
            _check_again(locked, target, kind)
            message, choice = target.user_message, target.choice
        turn = turn_start(session=locked, text=message, choice=choice)
        turn.origin = kind
        turn.files = target.files  # sent again with the files it carried (already in this session)
        # and its MCP resources (read again when it runs, so not "changed since" this message yet)
        turn.resources = [{k: v for k, v in r.items() if k != "changedAt"} for r in target.resources]
        turn.save(update_fields=["origin", "files", "resources"])
        replaced = locked.turns.filter(index__gte=target.index, index__lt=turn.index, replaced_by__isnull=True)
        replaced_ids = list(replaced.values_list("pk", flat=True))
        replaced.update(replaced_by=turn)
    logger.info(
        "Turn %s of session %s sent again (%s) as turn %s",
        target.index,
        locked.pk,
        kind,
        turn.index,
        extra={
            "event": "turn.resent",
            "session_id": locked.pk,
            "kind": kind,
            "turn_id": turn.pk,
            "replaced_turn_ids": replaced_ids,
        },
    )
    return turn


def _check_again(session: AgentSession, target: Turn, kind: str) -> None:
    """A retry or regenerate: of the last turn, in a status it may be sent again from."""
    if session.turns.filter(index__gt=target.index, replaced_by__isnull=True).exists():
        raise ValidationError({"turn": ValidationError(ERROR_NOT_LAST, code=CODE_NOT_LAST)})
    if target.status not in AGAIN_FROM[kind]:
        error = ERROR_NOT_RETRYABLE if kind == Origin.RETRY else ERROR_NOT_REGENERABLE
        raise ValidationError({"turn": ValidationError(error, code=CODE_INVALID)})
