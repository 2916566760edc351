"""Programs on `/api/v1/` with the provider's JWT access tokens (APTIX_OIDC_API_AUDIENCE set): checked
like ID tokens (signature against the JWKS, `iss`, `aud`, `exp`) and mapped to the account of its `sub`,
which must have signed in to Aptix once and still be active. aptix/bearer.py asks this by dotted path
(settings.API_BEARER_FALLBACK) after Aptix's own tokens, so the lower layer does not import it."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from .models import ExternalIdentity
from .provider import JWKS_REFRESH_MIN, ProviderError, TokenRefused, provider, validate_jwt


def access_token_user(authorization: str | None) -> Any:
    """The active user of an `Authorization: Bearer <provider JWT>`, or None."""
    audience = settings.APTIX_OIDC_API_AUDIENCE
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    if not audience or scheme.lower() != "bearer" or token.count(".") != 2:
        return None
    try:
        # Anyone may send a token naming a made-up key: the keys are fetched again at most so often.
        claims = validate_jwt(token, audience=audience, refresh_wait=JWKS_REFRESH_MIN, check_azp=False)
        issuer = provider().issuer
    except (TokenRefused, ProviderError):
        return None
    if "nonce" in claims:  # an ID token, made for signing in to a browser session, not for a program
        return None
    identity = ExternalIdentity.objects.select_related("user").filter(issuer=issuer, subject=claims["sub"]).first()
    if identity is None or not identity.user.is_active:
        return None
    return identity.user
