"""Share links: a read-only link to a session, besides sharing it with the team (services.py).

A *team* link opens for a signed-in member of the session's team (anyone else: the 404 of any missing
page); a *public* link opens without signing in, and only while APTIX_PUBLIC_LINKS is on (off, even a
link made while it was on is refused). The link's secret is random (256 bits) and only its SHA-256 is
stored, as for invitations (aptix/invites.py): its author sees it once. A link stops working when it
expires (LINK_DAYS, the author's choice), when its author revokes it (Settings → Shared, or the
session menu) and when its session is deleted. What a public link shows leaves the tool calls and the
files out unless its author ticked them. Creation and revocation are logged (`share_link.*` events).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from aptix.models import Membership

from ..models import AgentSession, ShareLink

logger = logging.getLogger("aptix.sessions")

LINK_DAYS = (1, 7, 30)  # what the author may pick
DEFAULT_DAYS = 7
ERROR_DAYS = "A link lasts 1, 7 or 30 days."
ERROR_KIND = "A link is for the team or public."
ERROR_PUBLIC_OFF = "Public links are turned off on this installation: make a link for the team instead."
ERROR_UNKNOWN = "No such link."
ERROR_REVOKED = "This link was revoked by its author: it shows nothing any more."
ERROR_EXPIRED = "This link has expired: it shows nothing any more. Ask its author for a new one."
ERROR_DELETED = "The session of this link was deleted: the link shows nothing any more."


def public_links_on() -> bool:
    """Whether public links may be made and opened (APTIX_PUBLIC_LINKS)."""
    return bool(settings.APTIX_PUBLIC_LINKS)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def share_link_create(
    *,
    session: AgentSession,
    user: Any,
    kind: str = ShareLink.Kind.TEAM,
    days: int = DEFAULT_DAYS,
    include_tools: bool = False,
    include_files: bool = False,
) -> tuple[ShareLink, str]:
    """A new link to the (owner's) session and its secret (never stored: show it now). Callers pass
    the owner's session (session_get without `read`). A team link shows the tool calls and the files' names,
    as a team reader sees them; a public one only what its author ticked. ValidationError for a kind or a duration not
    offered (`kind`: ERROR_KIND or ERROR_PUBLIC_OFF, `days`: ERROR_DAYS)."""
    if kind not in ShareLink.Kind.values:
        raise ValidationError({"kind": ValidationError(ERROR_KIND, code="kind")})
    if kind == ShareLink.Kind.PUBLIC and not public_links_on():
        raise ValidationError({"kind": ValidationError(ERROR_PUBLIC_OFF, code="public_off")})
    if days not in LINK_DAYS:
        raise ValidationError({"days": ValidationError(ERROR_DAYS, code="days")})
    if kind == ShareLink.Kind.TEAM:  # the team's reading: what a reader of the shared session sees
        include_tools = include_files = True
    secret = secrets.token_urlsafe(32)
    link = ShareLink(
        session=session,
        created_by=user,
        kind=kind,
        token_hash=_digest(secret),
        include_tools=include_tools,
        include_files=include_files,
        expires_at=timezone.now() + timedelta(days=days),
    )
    link.full_clean()
    link.save()
    logger.info(
        "%s link to session %s made",
        link.get_kind_display(),
        session.pk,
        extra={
            "event": "share_link.created",
            "link_id": link.pk,
            "session_id": session.pk,
            "kind": kind,
            "days": days,
            "user_id": user.pk,
        },
    )
    return link, secret


def share_link_list(*, user: Any) -> QuerySet[ShareLink]:
    """The links `user` made that still work (neither revoked nor expired, their session not deleted),
    newest first."""
    return (
        ShareLink.objects.filter(
            created_by=user,
            revoked_at__isnull=True,
            expires_at__gt=timezone.now(),
            session__deleted_at__isnull=True,
        )
        .select_related("session")
        .order_by("-created_at")
    )


def share_link_session_list(*, user: Any, session: AgentSession) -> QuerySet[ShareLink]:
    """The working links `user` made to `session` (its menu lists them)."""
    return share_link_list(user=user).filter(session=session)


def share_link_get(*, user: Any, link_id: str) -> ShareLink | None:
    """One of the working links `user` made; None when there is no such link for them."""
    return share_link_list(user=user).filter(pk=link_id).first()


def share_link_revoke(*, user: Any, link_id: str) -> ShareLink | None:
    """Revoke a working link `user` made: it is refused from now on (ERROR_REVOKED, 410). None when
    there is no such link for `user` (revoked or expired already, or someone else's)."""
    with transaction.atomic():
        link = share_link_list(user=user).select_for_update(of=("self",)).filter(pk=link_id).first()
        if link is None:
            return None
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
    logger.info(
        "Link %s to session %s revoked",
        link.pk,
        link.session_id,
        extra={"event": "share_link.revoked", "link_id": link.pk, "session_id": link.session_id, "user_id": user.pk},
    )
    return link


def share_link_open(*, secret: str) -> ShareLink:
    """The link of a secret, if it still shows its session; its opening counted. ValidationError with
    the reason otherwise: `unknown` (no such link, or a public one while public links are off) and
    `gone` (revoked, expired, or its session deleted). Who may open it (a team link: the team's
    signed-in members) is share_link_admits's to say, before the opening is counted."""
    link = ShareLink.objects.select_related("session", "session__team", "session__user").filter(
        token_hash=_digest(secret)
    )
    found = link.first()
    if found is None or (found.kind == ShareLink.Kind.PUBLIC and not public_links_on()):
        raise ValidationError(ERROR_UNKNOWN, code="unknown")
    if found.revoked_at is not None:
        raise ValidationError(ERROR_REVOKED, code="gone")
    if found.expires_at <= timezone.now():
        raise ValidationError(ERROR_EXPIRED, code="gone")
    if found.session.deleted_at is not None:
        raise ValidationError(ERROR_DELETED, code="gone")
    return found


def share_link_admits(*, link: ShareLink, user: Any) -> bool:
    """Whether `user` (maybe anonymous) may see what `link` shows: anyone for a public link, a member
    of the session's team for a team link."""
    if link.kind == ShareLink.Kind.PUBLIC:
        return True
    if not user.is_authenticated:
        return False
    return Membership.objects.filter(team_id=link.session.team_id, user=user).exists()


def share_link_opened(*, link: ShareLink) -> None:
    """Count one opening of the link (Settings → Shared shows how often it was opened)."""
    now = timezone.now()
    ShareLink.objects.filter(pk=link.pk).update(opened_count=F("opened_count") + 1, last_opened_at=now)
    link.opened_count += 1
    link.last_opened_at = now
