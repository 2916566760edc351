"""Invites: adding a person in one step. Administrators (in the admin or on /invites/) and a team's owners
(on /invites/, for their own teams only) name an e-mail address, a team and a role; Aptix makes a one-time
link, valid for INVITE_DAYS, shows it to the inviter and e-mails it. Whoever opens it sets a password
and becomes a user with that e-mail address as their username, in that team with that role.

The link's secret is random (256 bits) and only its SHA-256 is stored, as for API tokens. An invite
is for a new, local account: an address that already has one is refused with the reason (an
administrator adds an existing user to a team under Admin → Teams). With sign-in by the identity
provider, its mapping makes accounts instead.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from .lockout import password_sign_in_on
from .models import Invite, Membership, Team

logger = logging.getLogger("aptix.invites")

INVITE_DAYS = 7
ERROR_NOT_OWNER = "You can invite people only into a team you own."
ERROR_EMAIL_TAKEN = (
    "There is already an account with this e-mail address. An invite makes a new account: ask an "
    "administrator to add the existing one to the team (Admin → Teams)."
)
ERROR_UNKNOWN = "This invitation link is not valid. Check that it was copied whole, or ask for a new one."
ERROR_USED = "This invitation was accepted already. Sign in with its e-mail address and your password."
ERROR_REVOKED = "This invitation was withdrawn. Ask whoever invited you for a new one."
ERROR_EXPIRED = (
    f"This invitation has expired (links are valid for {INVITE_DAYS} days). Ask whoever invited you for a new one."
)

ERROR_PASSWORDS_OFF = (
    "Sign-in with a password is off here, and an invitation makes a password account: people join by "
    "signing in with the identity provider, whose groups give them their team."
)


def invites_on() -> bool:
    """Whether invitations are made and accepted: not when sign-in with a password is off, where an
    invitee's password account could never sign in again; the provider's group rules make accounts then."""
    return password_sign_in_on()


def _passwords_off() -> ValidationError:
    return ValidationError(ERROR_PASSWORDS_OFF, code="passwords_off")


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def invite_teams(*, user: Any) -> QuerySet[Team]:
    """The teams `user` may invite into: every team for administrators (staff with the permission to
    add invites, as superusers have; not auditors or curators), else the teams they own."""
    if user.is_staff and user.has_perm("aptix.add_invite"):
        return Team.objects.order_by("name")
    owned = Membership.objects.filter(user=user, role=Membership.Role.OWNER).values("team_id")
    return Team.objects.filter(pk__in=owned).order_by("name")


def invite_allowed(*, user: Any) -> bool:
    """Whether `user` may invite anyone (an administrator, or the owner of a team), invites being on."""
    return invites_on() and invite_teams(user=user).exists()


def invite_list(*, user: Any) -> QuerySet[Invite]:
    """The invites neither accepted nor withdrawn yet into the teams `user` may invite into, newest first."""
    teams = invite_teams(user=user)
    pending = Invite.objects.filter(team__in=teams, accepted_at__isnull=True, revoked_at__isnull=True)
    return pending.select_related("team", "invited_by")


def _email_taken(email: str) -> bool:
    users = get_user_model().objects
    return users.filter(Q(email__iexact=email) | Q(username__iexact=email)).exists()


def invite_check(*, inviter: Any, team: Team, email: str) -> str:
    """The address normalised, if `inviter` may invite it into `team`; else invite_create's errors."""
    if not invites_on():
        raise _passwords_off()
    if not invite_teams(user=inviter).filter(pk=team.pk).exists():
        raise ValidationError({"team": ValidationError(ERROR_NOT_OWNER, code="forbidden")})
    email = get_user_model().objects.normalize_email(email.strip())
    if _email_taken(email):
        raise ValidationError({"email": ValidationError(ERROR_EMAIL_TAKEN, code="taken")})
    return email


def invite_create(*, inviter: Any, team: Team, email: str, role: str = Membership.Role.MEMBER) -> tuple[Invite, str]:
    """A new invite and its link's secret (never stored: show it now). ValidationError when the
    inviter may not invite into `team` (`team`: ERROR_NOT_OWNER), the address already has an account
    (`email`: ERROR_EMAIL_TAKEN), a field is invalid or invites are off (ERROR_PASSWORDS_OFF)."""
    email = invite_check(inviter=inviter, team=team, email=email)
    secret = secrets.token_urlsafe(32)
    invite = Invite(
        email=email,
        team=team,
        role=role,
        token_hash=_digest(secret),
        invited_by=inviter,
        expires_at=timezone.now() + timedelta(days=INVITE_DAYS),
    )
    invite.full_clean()
    invite.save()
    logger.info(
        "Invite to %s for %s",
        team,
        email,
        extra={"event": "invite.created", "invite_id": invite.pk, "team_id": team.pk, "by": inviter.pk},
    )
    return invite, secret


def invite_send(*, invite: Invite, link: str) -> bool:
    """E-mail the link to the invitee through Django's e-mail backend (APTIX_EMAIL_URL; the console
    unless set). False, logged, when sending failed: the inviter has the link to pass on."""
    inviter = invite.invited_by.get_username() if invite.invited_by else "An administrator"
    body = (
        f"{inviter} invited you to the team {invite.team} on Aptix.\n\n"
        f"Open this link to choose your password (it works once, until {invite.expires_at:%Y-%m-%d %H:%M} UTC):\n"
        f"{link}\n\nYou then sign in with your e-mail address, {invite.email}.\n"
    )
    try:
        send_mail(f"You are invited to {invite.team} on Aptix", body, settings.DEFAULT_FROM_EMAIL, [invite.email])
    except OSError:  # smtplib's errors and connection failures are all OSError
        logger.exception("Invite e-mail to %s failed", invite.email, extra={"event": "invite.mail_failed"})
        return False
    return True


def invite_revoke(*, user: Any, invite_id: int) -> Invite | None:
    """Withdraw a pending invite into a team `user` may invite into: its link is refused from now on
    (ERROR_REVOKED). None when there is no such invite for `user` (accepted or withdrawn already, or
    another team's)."""
    with transaction.atomic():
        invite = invite_list(user=user).select_for_update(of=("self",)).filter(pk=invite_id).first()
        if invite is None:
            return None
        invite.revoked_at = timezone.now()
        invite.save(update_fields=["revoked_at"])
    logger.info(
        "Invite %s withdrawn", invite.pk, extra={"event": "invite.revoked", "invite_id": invite.pk, "by": user.pk}
    )
    return invite


def invite_renew(*, user: Any, invite_id: int) -> tuple[Invite, str] | None:
    """A new link for a pending invite (to send again): a new secret (the old link stops working) and
    another INVITE_DAYS from now. None when there is no such invite for `user`; ValidationError when
    the address has an account by now (ERROR_EMAIL_TAKEN) or invites are off."""
    if not invites_on():
        raise _passwords_off()
    with transaction.atomic():
        invite = invite_list(user=user).select_for_update(of=("self",)).filter(pk=invite_id).first()
        if invite is None:
            return None
        if _email_taken(invite.email):
            raise ValidationError({"email": ValidationError(ERROR_EMAIL_TAKEN, code="taken")})
        secret = secrets.token_urlsafe(32)
        invite.token_hash, invite.expires_at = _digest(secret), timezone.now() + timedelta(days=INVITE_DAYS)
        invite.save(update_fields=["token_hash", "expires_at"])
    logger.info(
        "Invite %s renewed", invite.pk, extra={"event": "invite.renewed", "invite_id": invite.pk, "by": user.pk}
    )
    return invite, secret


def invite_get(*, secret: str) -> Invite:
    """The invite of a link, if it can still be accepted; else ValidationError with the reason."""
    if not invites_on():  # made before sign-in with a password was turned off
        raise _passwords_off()
    invite = Invite.objects.select_related("team").filter(token_hash=_digest(secret)).first()
    if invite is None:
        raise ValidationError(ERROR_UNKNOWN, code="unknown")
    if invite.accepted_at is not None:
        raise ValidationError(ERROR_USED, code="used")
    if invite.revoked_at is not None:
        raise ValidationError(ERROR_REVOKED, code="revoked")
    if invite.expired:
        raise ValidationError(ERROR_EXPIRED, code="expired")
    return invite


def invite_accept(*, secret: str, password: str) -> Any:
    """Accept the invite of a link: a new user (username and e-mail: the invite's address) with
    `password`, a member of the invite's team in its role, and the invite used up — all or nothing.
    ValidationError for a link that cannot be accepted (invite_get), a password the validators refuse
    (`password`) or an address that has an account by now (`email`)."""
    with transaction.atomic():
        invite = invite_get(secret=secret)
        invite = Invite.objects.select_for_update().get(pk=invite.pk)
        if invite.accepted_at is not None:  # accepted meanwhile, by another request
            raise ValidationError(ERROR_USED, code="used")
        if _email_taken(invite.email):
            raise ValidationError({"email": ValidationError(ERROR_EMAIL_TAKEN, code="taken")})
        user = get_user_model()(username=invite.email, email=invite.email)
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise ValidationError({"password": exc.error_list}) from None
        user.set_password(password)
        user.full_clean(exclude=["password"])
        user.save()
        Membership.objects.create(team=invite.team, user=user, role=invite.role)
        invite.accepted_at, invite.user = timezone.now(), user
        invite.save(update_fields=["accepted_at", "user"])
    logger.info("Invite %s accepted", invite.pk, extra={"event": "invite.accepted", "user_id": user.pk})
    return user
