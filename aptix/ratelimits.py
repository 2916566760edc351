"""Request rate limits: how many turns a user may start, API calls a token may make and requests with
a bad bearer token an address may send, per period (docs/operations.md "Rate limits").

The counting is django-ratelimit's (`get_usage`: a fixed window per key in Django's cache, atomic
`incr`), so the limits hold across processes when the cache is shared (Redis with REDIS_URL) and per
process otherwise. The rates are settings (APTIX_RATE_*, `None` = off); callers answer a `Limited`
with 429 and its `Retry-After`, in their own error format.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from django.conf import settings
from django_ratelimit.core import get_usage

from . import metrics

# A group names what is counted and the setting that holds its rate.
TURNS = "turns"
API = "api"
BAD_TOKENS = "bad-tokens"
INVITES = "invites"
SHARE_LINKS = "share-links"
RATE_SETTINGS = {
    TURNS: "APTIX_RATE_TURNS",
    API: "APTIX_RATE_API",
    BAD_TOKENS: "APTIX_RATE_BAD_TOKENS",
    INVITES: "APTIX_RATE_INVITES",
    SHARE_LINKS: "APTIX_RATE_SHARE_LINKS",
}
MESSAGES = {
    TURNS: "Too many new messages or conversations: at most {rate}. Try again in {seconds} s.",
    API: "Too many API requests with this token: at most {rate}. Try again in {seconds} s.",
    BAD_TOKENS: "Too many requests with an invalid API token from this address. Try again in {seconds} s.",
    INVITES: "Too many requests to invitation links from this address. Try again in {seconds} s.",
    SHARE_LINKS: "Too many requests to share links from this address. Try again in {seconds} s.",
}

# django-ratelimit's rate syntax: "30/m", "100/5m", "5/s" (s, m, h, d; a bare count is per second).
RATE_RE = re.compile(r"(\d+)/(\d*)([smhd]?)")
PERIOD_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "": 1}
PERIOD_NAMES = {86400: "day", 3600: "hour", 60: "minute", 1: "second"}


@dataclass(frozen=True)
class Limited:
    """A refused request: the user-facing message and the seconds until the window ends."""

    message: str
    retry_after: int


def parse_rate(value: str) -> tuple[int, int]:
    """`"30/m"` → (30, 60): the count and the period in seconds. ValueError names what is wrong."""
    match = RATE_RE.fullmatch(value.strip().lower())
    if match is None:
        raise ValueError(f"{value!r} is not a rate such as 30/m, 100/5m or 1000/h")
    count, multiple, unit = int(match.group(1)), int(match.group(2) or 1), match.group(3)
    if count < 1 or multiple < 1:
        raise ValueError(f"{value!r} allows nothing; use 'off' to turn the limit off")
    return count, multiple * PERIOD_SECONDS[unit]


def describe_rate(rate: str) -> str:
    """`"30/m"` → "30 per minute", `"100/5m"` → "100 per 5 minutes"."""
    count, seconds = parse_rate(rate)
    unit = next(u for u in PERIOD_NAMES if seconds % u == 0)
    name = PERIOD_NAMES[unit]
    return f"{count} per {name}" if seconds == unit else f"{count} per {seconds // unit} {name}s"


def client_ip(request) -> str | None:
    """The client's address: REMOTE_ADDR, or behind APTIX_TRUSTED_PROXIES proxies (each appending the
    address it was reached from to X-Forwarded-For) the address the outermost proxy saw. Entries
    before that one come from the client and are not trusted."""
    remote = request.META.get("REMOTE_ADDR") or None
    proxies = settings.APTIX_TRUSTED_PROXIES
    if proxies:
        hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
        if len(hops) >= proxies and _is_ip(hops[-proxies]):
            return hops[-proxies]
    return remote


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def user_key(user) -> str:
    return f"user:{user.pk}"


def address_key(request) -> str:
    """The key of the client's address: an IPv6 client usually holds a whole /64, so that is one key."""
    ip = client_ip(request) or "unknown"
    if ":" in ip and _is_ip(ip):
        return str(ipaddress.ip_network(f"{ip}/64", strict=False).network_address)
    return ip


def rate_limit(group: str, key: str, request, *, count: bool = True) -> Limited | None:
    """Count one request of `group` for `key` (a user id, a token digest, an address) and say whether
    it is over the limit; `count=False` only looks (is this key already at its limit?). None when
    allowed, or when the group's rate is off."""
    rate = getattr(settings, RATE_SETTINGS[group])
    if not rate:
        return None
    usage = get_usage(request, group=group, key=lambda _group, _request: key, rate=rate, increment=count)
    if usage is None:  # RATELIMIT_ENABLE = False
        return None
    over = usage["should_limit"] if count else usage["count"] >= usage["limit"]
    if not over:
        return None
    seconds = max(1, usage["time_left"])
    metrics.refused(group)
    return Limited(MESSAGES[group].format(rate=describe_rate(rate), seconds=seconds), seconds)
