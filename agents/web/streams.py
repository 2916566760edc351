"""What a session stream (agents/web/consumers.py) may cost and how long it may live.

- **Caps.** A process holds at most `APTIX_WS_MAX_PER_USER` streams of one user and
  `APTIX_WS_MAX_PER_SESSION` of one session; one more is accepted and closed at once with
  `CLOSE_TOO_MANY` (a code htmx's ws extension does not retry, so the page says so instead of
  reconnecting in a loop). The caps are per process: a web process counts the sockets it serves.
- **Replay.** A reconnect replays at most `APTIX_WS_REPLAY_MAX` events; a page further behind is told
  to reload (the page render is cheaper than replaying its history event by event).
- **Access.** A socket lives only while its user may read the session: it joins its user's group,
  and a logout, a change of the user (deactivated, new password), a lost team membership, a
  deleted session or a session no longer shared with their team sends that group `access.check`;
  each socket then checks again and closes, if its access is gone, with the code that says why
  (`CLOSE_SIGNED_OUT`, `CLOSE_ACCESS_LOST`, `CLOSE_SESSION_GONE`). A timer
  checks every `APTIX_WS_RECHECK` seconds too (a session that expired, a change made where no
  signal fires).
- **Frames from the client.** The stream is one-way; a message over `APTIX_WS_MAX_MESSAGE` bytes
  closes the socket with 1009 (Daphne itself refuses messages over 1 MiB before buffering them).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user, get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils.module_loading import import_string

from aptix import metrics
from aptix.models import Membership
from aptix.teams import team_member_ids

from ..events.channel import user_group
from ..models import AgentSession
from ..sessions import session_live, session_readable, session_shares_of

logger = logging.getLogger("aptix.stream")

# Why a socket's access ended, each with its own sentence on the page (session_detail.html):
CLOSE_SIGNED_OUT = 4401  # the login ended (a logout, an expired login, a new password, a deactivated user)
CLOSE_ACCESS_LOST = 4403  # signed in, but no longer allowed to read it (unshared, a team left)
CLOSE_SESSION_GONE = 4410  # the session was deleted
CLOSE_TOO_MANY = 4429  # over the per-user or per-session cap
# Daphne (Autobahn) sends only 1000 or a code in 3000-4999 and fails the socket with 1011 on any other
# (RFC 6455's 1009 "message too big" included): our codes are 4000 + the nearest HTTP status.
CLOSE_TOO_BIG = 4413  # a client frame over APTIX_WS_MAX_MESSAGE
CLOSE_BAD_CURSOR = 4400  # `?turn=&seq=` that no page writes (not a turn id, not a seq)


class OpenStreams:
    """The streams this process holds, by user and by session."""

    def __init__(self) -> None:
        self.by_user: dict[Any, set[object]] = defaultdict(set)
        self.by_session: dict[str, set[object]] = defaultdict(set)

    def admit(self, stream: object, *, user_id: Any, session_id: str) -> str | None:
        """Count the stream in, or say why not."""
        if len(self.by_user[user_id]) >= settings.APTIX_WS_MAX_PER_USER:
            metrics.refused("ws-per-user")
            return f"more than {settings.APTIX_WS_MAX_PER_USER} live views of one user"
        if len(self.by_session[session_id]) >= settings.APTIX_WS_MAX_PER_SESSION:
            metrics.refused("ws-per-session")
            return f"more than {settings.APTIX_WS_MAX_PER_SESSION} live views of one session"
        self.by_user[user_id].add(stream)
        self.by_session[session_id].add(stream)
        metrics.websocket_opened()
        return None

    def release(self, stream: object, *, user_id: Any, session_id: str) -> None:
        if stream in self.by_session.get(session_id, ()):
            metrics.websocket_closed()
        for index, key in ((self.by_user, user_id), (self.by_session, session_id)):
            streams = index.get(key)
            if streams is not None:
                streams.discard(stream)
                if not streams:
                    del index[key]


open_streams = OpenStreams()


def access_lost(*, user_id: Any, session_key: str | None, session_id: str) -> int | None:
    """None while the login behind a socket still holds and its user may still read the session; else
    the close code that says why not (CLOSE_SIGNED_OUT, CLOSE_SESSION_GONE, CLOSE_ACCESS_LOST). The
    login is checked as for every page request (django.contrib.auth.get_user on a fresh read of the
    login session: it exists, its backend is configured, the user is active, the auth hash is
    current, so a new password logs every other device out); the session is in one of their teams."""
    if not session_key:
        return CLOSE_SIGNED_OUT
    store = import_string(f"{settings.SESSION_ENGINE}.SessionStore")(session_key)
    user = get_user(SimpleNamespace(session=store))  # type: ignore[arg-type]  # it reads request.session only
    if not user.is_authenticated or str(user.pk) != str(user_id):
        return CLOSE_SIGNED_OUT
    if session_readable(user=user, session_id=session_id):
        return None
    if not session_live(session_id=session_id):
        return CLOSE_SESSION_GONE
    return CLOSE_ACCESS_LOST


def access_changed(user_id: Any, *, ended_session: str | None = None) -> None:
    """Ask every stream of the user to check its access again (`ended_session`: a login session
    that has just ended; its sockets close without a look at the database, where it still exists
    until the logout finishes)."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "access.check", "ended_session": ended_session}
    try:
        async_to_sync(layer.group_send)(user_group(user_id), message)
    except Exception:  # the change itself must not fail because a broadcast did
        logger.exception("Could not ask the streams of user %s to check their access", user_id)


@receiver(user_logged_out, dispatch_uid="aptix-streams-logout")
def _logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if user is not None:
        access_changed(user.pk, ended_session=getattr(request.session, "session_key", None))


def access_changed_on_commit(user_id: Any) -> None:
    """access_changed once the current transaction commits. The changes below are made inside one (the
    admin saves in one): asked at once, a stream in another process looked while the change was still
    uncommitted, found the access unchanged, and stayed open until its next periodic check."""
    transaction.on_commit(lambda: access_changed(user_id))


@receiver(post_save, sender=get_user_model(), dispatch_uid="aptix-streams-user-saved")
def _user_saved(sender: Any, instance: Any, created: bool, update_fields: Any = None, **kwargs: Any) -> None:
    if not created and set(update_fields or ()) != {"last_login"}:  # a login changes nothing here
        access_changed_on_commit(instance.pk)


@receiver(post_delete, sender=Membership, dispatch_uid="aptix-streams-membership-deleted")
def _membership_deleted(sender: Any, instance: Membership, **kwargs: Any) -> None:
    access_changed_on_commit(instance.user_id)
    if session_shares_of(team_id=instance.team_id, user_id=instance.user_id):  # its readers lose those too
        for user_id in team_member_ids(team_id=instance.team_id):
            access_changed_on_commit(user_id)


@receiver(post_save, sender=AgentSession, dispatch_uid="aptix-streams-session-unshared")
def _session_unshared(sender: Any, instance: AgentSession, update_fields: Any = None, **kwargs: Any) -> None:
    """A shared session that stops being shared (or is deleted): its readers' sockets close at once.
    Only saves that name those columns look further (not a turn's every `updated_at`)."""
    changed = set(update_fields or ())
    unshared = "shared_at" in changed and instance.shared_at is None
    if unshared or ("deleted_at" in changed and instance.deleted_at is not None and instance.shared_at is not None):
        for user_id in team_member_ids(team_id=instance.team_id):
            if user_id != instance.user_id:
                access_changed_on_commit(user_id)


@receiver(post_delete, sender=AgentSession, dispatch_uid="aptix-streams-session-deleted")
def _session_deleted(sender: Any, instance: AgentSession, **kwargs: Any) -> None:
    access_changed_on_commit(instance.user_id)
