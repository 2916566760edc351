"""Bearer-token authentication of program requests (the JSON API, images), within the rate limits:
requests with an invalid token are counted per client address, and past APTIX_RATE_BAD_TOKENS that
address's bearer requests are refused before any token is looked at; a valid token's requests are
counted against APTIX_RATE_API."""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.utils.module_loading import import_string

from .models import ApiToken
from .ratelimits import API, BAD_TOKENS, Limited, address_key, rate_limit
from .tokens import api_token_of, interface_refusal


class NotForHere(Exception):
    """A valid token limited to other interfaces (ApiToken.interfaces): 403 with the message."""


class RateLimited(Exception):
    def __init__(self, limited: Limited) -> None:
        super().__init__(limited.message)
        self.limited = limited


def bearer_user(request, interface: str = ApiToken.Interface.API):
    """The active user of the request's `Authorization: Bearer <token>` on `interface` (the JSON API,
    the MCP server, the A2A agent), or None for a missing or invalid token (counted). The token's
    row goes on the request as `request.api_token` (None for a provider's access token), whose mode
    limits the turn's services read (token_modes). Raises RateLimited when the address or the token
    is over its limit, NotForHere when the token is limited to other interfaces."""
    address = address_key(request)
    if limited := rate_limit(BAD_TOKENS, address, request, count=False):
        raise RateLimited(limited)
    authorization = request.headers.get("Authorization")
    token = api_token_of(authorization)
    request.api_token = token
    user = token.user if token is not None else None
    if user is None and (fallback := getattr(settings, "API_BEARER_FALLBACK", None)):
        user = import_string(fallback)(authorization)  # the provider's access tokens (identity/access_tokens.py)
    if user is None:
        # Counted and judged in one atomic step (the cache's incr): of concurrent guesses that all
        # passed the look above, only those within the limit are told "invalid"; the rest are refused.
        if limited := rate_limit(BAD_TOKENS, address, request):
            raise RateLimited(limited)
        return None
    secret = (authorization or "").partition(" ")[2].strip()
    if limited := rate_limit(API, f"token:{hashlib.sha256(secret.encode()).hexdigest()}", request):
        raise RateLimited(limited)
    if refusal := interface_refusal(token, interface):
        raise NotForHere(refusal)
    return user


def token_modes(request) -> tuple[str, ...]:
    """The mode keys the request's API token is limited to (bearer_user put it there); () for none."""
    token = getattr(request, "api_token", None)
    return tuple(token.modes) if token is not None else ()
