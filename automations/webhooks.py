"""A webhook call's signature: `X-Aptix-Timestamp: <unix seconds>` and `X-Aptix-Signature:
sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>", keyed with the secret's UTF-8 bytes>`.

Refused (the caller answers 401, and nothing runs): a missing or malformed header, a signature that
does not match, a timestamp more than WINDOW seconds from now (either way), and a signature seen
before (WebhookDelivery: a unique row per signature, kept for the window, so a replay is refused by
any process). The secret is derived, never stored: HMAC of SECRET_KEY over the automation's id and salt."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac

from .models import Automation, WebhookDelivery

WINDOW = 300  # seconds a signed call stays valid (and its signature remembered)
TIMESTAMP_HEADER = "X-Aptix-Timestamp"
SIGNATURE_HEADER = "X-Aptix-Signature"


class SignatureRefused(Exception):
    """Why a webhook call was refused (the message is the 401's)."""


def derive_secret(automation_id: str, salt: str) -> str:
    return (
        "whsec_" + salted_hmac("aptix.automations.webhook", f"{automation_id}:{salt}", algorithm="sha256").hexdigest()
    )


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value for `body` sent at `timestamp` (what a caller computes)."""
    digest = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signature_check(automation: Automation, *, timestamp: str | None, signature: str | None, body: bytes) -> None:
    """Accept the call once, or raise SignatureRefused saying why."""
    if not automation.webhook or not automation.webhook_salt:
        raise SignatureRefused("This automation has no webhook.")
    if not timestamp or not signature:
        raise SignatureRefused(f"Send {TIMESTAMP_HEADER} and {SIGNATURE_HEADER} (or a bearer token of the owner).")
    if not timestamp.isdigit():
        raise SignatureRefused(f"{TIMESTAMP_HEADER} must be the time in whole seconds since 1970.")
    if abs(time.time() - int(timestamp)) > WINDOW:
        raise SignatureRefused(f"{TIMESTAMP_HEADER} is more than {WINDOW // 60} minutes from now.")
    expected = sign(derive_secret(automation.pk, automation.webhook_salt), timestamp, body)
    if not hmac.compare_digest(expected, signature.strip()):
        raise SignatureRefused("The signature does not match the body and timestamp.")
    digest = signature.strip().removeprefix("sha256=")
    WebhookDelivery.objects.filter(at__lt=timezone.now() - timedelta(seconds=WINDOW)).delete()
    try:
        with transaction.atomic():
            WebhookDelivery.objects.create(automation=automation, signature=digest)
    except IntegrityError:
        raise SignatureRefused("This signature was used before (a replay).") from None


def webhook_accept(automation_id: str, *, timestamp: str | None, signature: str | None, body: bytes) -> Automation:
    """The automation a signed call triggers, its signature accepted once, or SignatureRefused. An id
    of no automation, or of one without a webhook, goes through the same checks against a secret
    nobody holds, so the caller learns what a wrong signature would tell (the 401's message and
    time), never whether the id exists."""
    automation = Automation.objects.select_related("team", "owner").filter(pk=str(automation_id)[:32]).first()
    if automation is None or not automation.webhook or not automation.webhook_salt:
        stand_in = Automation(id=str(automation_id)[:32], webhook=True, webhook_salt=secrets.token_hex(16))
        signature_check(stand_in, timestamp=timestamp, signature=signature, body=body)
        raise SignatureRefused("The signature does not match the body and timestamp.")  # (not reached)
    signature_check(automation, timestamp=timestamp, signature=signature, body=body)
    return automation
