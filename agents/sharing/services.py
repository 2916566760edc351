"""Share a session with its team, stop sharing it, and "Continue as my copy".

A shared session stays its author's: teammates read it (sessions.session_get with `read=True`) and
every write refuses them (SessionReadOnlyError, a 403). Sharing is with the session's own team, so it
never crosses teams. Each share, unshare and copy writes a ShareEvent (who, when) for auditors.
Stopping takes effect at once: pages and the API answer 404 from the next request, and the readers'
sockets are asked to check their access when it commits (agents/web/streams.py, post_save)."""

from __future__ import annotations

import logging
from typing import Any, cast

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..attachments import AttachedFile
from ..models import AgentSession, ShareEvent, Turn, TurnEvent
from ..sessions import TITLE_MAX, session_create

logger = logging.getLogger("aptix.sessions")

COPY_SUFFIX = " (copy)"
# Not carried into a copy: the streamed pieces of a finished turn (its answer holds them; its page
# never loads them) would only multiply the copy's rows.
NOT_COPIED = ("model.delta",)
# A turn's columns that belong to its run in the original, not to its history (its cost was the
# author's spending, charged once).
RUN_COLUMNS = ("heartbeat_at", "dispatch", "worker", "lease_until", "traceparent", "state", "cancel_requested", "cost")


def session_share(*, session: AgentSession, user: Any, shared: bool) -> AgentSession:
    """Share the (owner's) session with its team, or stop sharing it; a no-op when it already is as
    asked (no audit row). Callers pass the owner's session (session_get without `read`)."""
    with transaction.atomic():
        locked = AgentSession.objects.select_for_update().get(pk=session.pk)
        if (locked.shared_at is not None) == shared:
            session.shared_at, session.shared_by_id = locked.shared_at, locked.shared_by_id
            return session
        locked.shared_at = timezone.now() if shared else None
        locked.shared_by = user if shared else None
        # Not `updated_at`: sharing is no activity in the session (the sidebars keep their order).
        locked.save(update_fields=["shared_at", "shared_by"])
        action = ShareEvent.Action.SHARE if shared else ShareEvent.Action.UNSHARE
        ShareEvent.objects.create(session=locked, team_id=locked.team_id, action=action, actor=user)
    session.shared_at, session.shared_by_id = locked.shared_at, locked.shared_by_id
    logger.info(
        "Session %s %s",
        session.pk,
        "shared with its team" if shared else "no longer shared",
        extra={"event": f"session.{action}", "session_id": session.pk, "user_id": getattr(user, "pk", None)},
    )
    return session


def session_copy(*, session: AgentSession, user: Any) -> AgentSession:
    """ "Continue as my copy": a new session of `user`'s in the shared session's team and mode, linked
    to it (`copied_from`), whose turns are the original's finished conversation (the turns an edit
    or retry replaced left out) with their events, so its first turn has them as context, as any
    later turn of a session has its earlier ones (agents/run/context.py). Callers pass a session the
    user may read (session_get with `read=True`)."""
    title = (str(session)[: TITLE_MAX - len(COPY_SUFFIX)] + COPY_SUFFIX).strip()
    with transaction.atomic():
        copy = _new_session(session, user=user, title=title)
        turns = list(session.turns.filter(status__in=Turn.FINAL_STATUSES, replaced_by__isnull=True).order_by("index"))
        clones = []
        for number, turn in enumerate(turns, start=1):
            clone = Turn(session=copy, index=number)
            for field in Turn._meta.concrete_fields:
                if field.name not in {"id", "session", "index", "replaced_by", "created_at", *RUN_COLUMNS}:
                    setattr(clone, field.attname, getattr(turn, field.attname))
            clone.files = [copied_file(f) for f in turn.files or []]
            clones.append(clone)
        Turn.objects.bulk_create(clones)
        new_id = {turn.pk: clone.pk for turn, clone in zip(turns, clones, strict=True)}
        events = TurnEvent.objects.filter(turn_id__in=new_id).exclude(type__in=NOT_COPIED).order_by("turn_id", "seq")
        TurnEvent.objects.bulk_create(
            (
                TurnEvent(turn_id=new_id[e.turn_id], seq=e.seq, type=e.type, payload=e.payload)
                for e in events.iterator()
            ),
            batch_size=500,
        )
        ShareEvent.objects.create(
            session=session, team_id=session.team_id, action=ShareEvent.Action.COPY, actor=user, copy=copy
        )
    logger.info(
        "Session %s continued as %s",
        session.pk,
        copy.pk,
        extra={"event": "session.copy", "session_id": session.pk, "copy_id": copy.pk, "user_id": user.pk},
    )
    return copy


def copied_file(attached: AttachedFile) -> AttachedFile:
    """What a copy keeps of a file the original's message carried: its description, not where the
    author's bytes are stored. The file stays its author's: a copy's model never reads it (a
    Regenerate in the copy after the author stopped sharing would send their image again)."""
    return cast(AttachedFile, {key: value for key, value in attached.items() if key != "image"})


def _new_session(original: AgentSession, *, user: Any, title: str) -> AgentSession:
    """The copy's session, in the original's mode (the default one when that mode left the catalog)."""
    try:
        copy = session_create(
            team=original.team, user=user, mode=original.mode, execution=original.execution, title=title
        )
    except ValidationError:
        copy = session_create(team=original.team, user=user, execution=original.execution, title=title)
    copy.copied_from = original
    copy.model = original.model
    copy.save(update_fields=["copied_from", "model"])
    return copy
