"""The provider as Aptix sees it: its discovery document (read once, kept for an hour) and the checks
of the JWTs it signs (ID tokens at sign-in, access tokens on the API): signature against its JWKS
(fetched again when a token names a key not seen yet, so a rotated key works at once), `iss`, `aud`,
`exp`, and the `nonce` of the sign-in that asked for it."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import jwt
import requests
from django.conf import settings

from aptix.envtypes import is_loopback

logger = logging.getLogger("aptix.identity")

DISCOVERY_PATH = "/.well-known/openid-configuration"
DISCOVERY_TTL = 3600.0  # seconds a discovery document is kept
JWKS_REFRESH_MIN = 30.0  # seconds between JWKS fetches that a token with an unknown key may cause (API tokens)
LEEWAY = 60  # seconds of clock skew allowed on exp, iat and nbf
# Asymmetric algorithms only: `none` and the HMAC family (keyed with the client secret) are never accepted.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
REQUIRED_ENDPOINTS = ("authorization_endpoint", "token_endpoint", "jwks_uri")


class ProviderError(Exception):
    """The provider cannot be used: unreachable, or its discovery document is wrong. Says which."""


class TokenRefused(Exception):
    """A token failed a check; the message says which (for the log, not for the user)."""


@dataclass(frozen=True)
class Provider:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    end_session_endpoint: str | None
    algorithms: tuple[str, ...]


def configured() -> bool:
    return bool(getattr(settings, "APTIX_OIDC_ISSUER", None))


def _url_allowed(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname))


def parse_discovery(issuer: str, document: Any) -> Provider:
    """The provider of a discovery document, or ProviderError saying what is wrong with it."""
    if not isinstance(document, dict):
        raise ProviderError(f"{issuer}{DISCOVERY_PATH} is not a JSON object.")
    if document.get("issuer") != issuer:
        raise ProviderError(
            f"The provider says its issuer is {document.get('issuer')!r}, not APTIX_OIDC_ISSUER={issuer!r}: "
            "set APTIX_OIDC_ISSUER to exactly the provider's issuer (a trailing slash counts)."
        )
    for name in (*REQUIRED_ENDPOINTS, "userinfo_endpoint", "end_session_endpoint"):
        value = document.get(name)
        if value is None and name not in REQUIRED_ENDPOINTS:
            continue
        if not isinstance(value, str) or not _url_allowed(value):
            raise ProviderError(f"The provider's {name} is missing or not an https:// URL: {value!r}.")
    offered = document.get("id_token_signing_alg_values_supported") or ["RS256"]
    algorithms = tuple(alg for alg in ALGORITHMS if alg in offered)
    if not algorithms:
        raise ProviderError(f"The provider signs ID tokens with none of {', '.join(ALGORITHMS)}: {offered}.")
    return Provider(
        issuer=issuer,
        authorization_endpoint=document["authorization_endpoint"],
        token_endpoint=document["token_endpoint"],
        jwks_uri=document["jwks_uri"],
        userinfo_endpoint=document.get("userinfo_endpoint"),
        end_session_endpoint=document.get("end_session_endpoint"),
        algorithms=algorithms,
    )


_lock = threading.Lock()
_discovered: dict[str, tuple[float, Provider]] = {}


def provider(*, fresh: bool = False) -> Provider:
    """The configured provider from its discovery document (kept for DISCOVERY_TTL), or ProviderError."""
    issuer = settings.APTIX_OIDC_ISSUER
    if not issuer:
        raise ProviderError("No identity provider is configured (APTIX_OIDC_ISSUER).")
    now = time.monotonic()
    with _lock:
        cached = _discovered.get(issuer)
    if cached is not None and not fresh and now - cached[0] < DISCOVERY_TTL:
        return cached[1]
    url = issuer.rstrip("/") + DISCOVERY_PATH
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderError(f"Could not read the provider's discovery document {url}: {exc}") from None
    found = parse_discovery(issuer, document)
    with _lock:
        _discovered[issuer] = (now, found)
    return found


def forget() -> None:
    """Drop the kept discovery documents and keys (tests; a changed configuration)."""
    with _lock:
        _discovered.clear()
        _keys.clear()


_keys: dict[str, tuple[float, dict[str, jwt.PyJWK]]] = {}  # jwks_uri → (fetched at, kid → key)


def _fetch_keys(jwks_uri: str) -> dict[str, jwt.PyJWK]:
    try:
        response = requests.get(jwks_uri, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        keys = jwt.PyJWKSet.from_dict(response.json()).keys
    except (requests.RequestException, ValueError, jwt.PyJWKSetError) as exc:
        raise TokenRefused(f"could not read the provider's keys at {jwks_uri}: {exc}") from None
    return {str(key.key_id): key for key in keys if key.key_id is not None}


def signing_key(found: Provider, kid: str, *, refresh_wait: float) -> jwt.PyJWK:
    """The provider's key `kid`. Keys are fetched again when `kid` is unknown, at most every
    `refresh_wait` seconds (0 at sign-in: a token got from the token endpoint; more for the API,
    where anyone may send a made-up key ID)."""
    now = time.monotonic()
    with _lock:
        fetched_at, keys = _keys.get(found.jwks_uri, (float("-inf"), {}))
    if kid not in keys and now - fetched_at >= refresh_wait:
        keys = _fetch_keys(found.jwks_uri)
        with _lock:
            _keys[found.jwks_uri] = (now, keys)
    if kid not in keys:
        raise TokenRefused(f"the provider publishes no key {kid!r}")
    return keys[kid]


def validate_jwt(
    token: str, *, audience: str, nonce: str | None = None, refresh_wait: float = 0.0, check_azp: bool = True
) -> dict[str, Any]:
    """The claims of a JWT the provider signed for `audience`, or TokenRefused saying which check failed."""
    found = provider()
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError as exc:
        raise TokenRefused(f"not a JWT: {exc}") from None
    alg = header.get("alg")
    if alg not in found.algorithms:
        raise TokenRefused(f"signed with {alg!r}, which is not accepted")
    key = signing_key(found, str(header.get("kid")), refresh_wait=refresh_wait)
    try:
        claims = jwt.decode(
            token,
            key=key,
            algorithms=[alg],
            audience=audience,
            issuer=found.issuer,
            leeway=LEEWAY,
            options={"require": ["iss", "aud", "exp", "iat", "sub"]},
        )
    except jwt.InvalidTokenError as exc:
        raise TokenRefused(f"{type(exc).__name__}: {exc}") from None
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    # An ID token for several audiences names the one it was issued to (OpenID Connect Core 3.1.3.7).
    if check_azp and len(audiences) > 1 and claims.get("azp") != audience:
        raise TokenRefused(f"issued to {claims.get('azp')!r} among several audiences")
    if nonce is not None and claims.get("nonce") != nonce:
        raise TokenRefused("its nonce is not this sign-in's (replayed, or from another sign-in)")
    return claims


def end_session_url(request: Any) -> str | None:
    """Where the provider ends its own session after Aptix's (RP-initiated logout), when it offers that."""
    try:
        found = provider()
    except ProviderError:
        return None
    if not found.end_session_endpoint:
        return None
    params = {
        "client_id": settings.OIDC_RP_CLIENT_ID,
        "post_logout_redirect_uri": request.build_absolute_uri(settings.LOGIN_REDIRECT_URL_FAILURE),
    }
    if id_token := request.session.get("oidc_id_token"):
        params["id_token_hint"] = id_token
    separator = "&" if "?" in found.end_session_endpoint else "?"
    return f"{found.end_session_endpoint}{separator}{urlencode(params)}"
