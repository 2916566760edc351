"""The authentication backend of the provider's callback: mozilla-django-oidc's code exchange (the code
with its PKCE verifier), with the endpoints from discovery, the ID token checked by identity/provider.py
and the account from identity/accounts.py. Any refusal is logged with its reason and the user is told
in words, on the login page."""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from .accounts import SignInRefused, account_sign_in
from .provider import ProviderError, TokenRefused, provider, validate_jwt

logger = logging.getLogger("aptix.identity")

FAILED = "Signing in with {provider} did not work. Try again; if it keeps failing, tell an administrator."
UNREACHABLE = "{provider} could not be reached to sign you in. Try again in a moment."


class ProviderBackend(OIDCAuthenticationBackend):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django builds a backend for every authenticate() and every request's user: no network here.
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY: str | None = None
        self.OIDC_OP_JWKS_ENDPOINT: str | None = None
        self.OIDC_OP_USER_ENDPOINT: str | None = None
        self.UserModel = get_user_model()

    def authenticate(self, request: Any, **kwargs: Any) -> Any:
        # Only the callback passes a nonce: a password login never makes this backend call the provider.
        if request is None or "nonce" not in kwargs or kwargs.get("nonce") is None:
            return None
        name = settings.APTIX_OIDC_NAME
        try:
            found = provider()
            self.OIDC_OP_TOKEN_ENDPOINT = found.token_endpoint
            self.OIDC_OP_USER_ENDPOINT = found.userinfo_endpoint
            self.OIDC_OP_JWKS_ENDPOINT = found.jwks_uri
            self.issuer = found.issuer
            return super().authenticate(request, **kwargs)
        except SignInRefused as exc:
            logger.warning("Sign-in refused: %s", exc)
            messages.error(request, str(exc))
        except (ProviderError, requests.RequestException) as exc:
            logger.warning("Sign-in failed: the provider could not be used: %s", exc)
            messages.error(request, UNREACHABLE.format(provider=name))
        except (TokenRefused, SuspiciousOperation) as exc:
            logger.warning("Sign-in refused: the ID token %s", exc)
            messages.error(request, FAILED.format(provider=name))
        return None

    def get_user(self, user_id: Any) -> Any:
        """The session's user, unless deactivated (the library's own would keep a deactivated user's
        session working; Django's ModelBackend does not)."""
        user = super().get_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None

    def verify_token(self, token: Any, **kwargs: Any) -> dict[str, Any]:
        if not isinstance(token, str):
            raise TokenRefused("is missing from the token response")
        return validate_jwt(token, audience=str(self.OIDC_RP_CLIENT_ID), nonce=kwargs.get("nonce") or "")

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The ID token's claims, completed by the userinfo endpoint's where it has one (some providers
        put groups or the e-mail only there). The ID token's `sub` decides who signs in."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT and access_token:
            try:
                extra = super().get_userinfo(access_token, id_token, payload)
            except (requests.RequestException, ValueError, TokenRefused) as exc:
                logger.warning("The provider's userinfo could not be read, signing in with the ID token: %s", exc)
                extra = {}
            if isinstance(extra, dict) and extra.get("sub") == payload.get("sub"):
                claims = {**extra, **{k: v for k, v in payload.items() if k not in extra or k in PROTECTED}}
        return claims

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        claims = self.get_userinfo(access_token, id_token, payload)
        return account_sign_in(issuer=self.issuer, claims=claims)


# Claims the verified ID token decides even when userinfo also sends them.
PROTECTED = frozenset({"iss", "sub", "aud", "exp", "iat", "nonce", "azp"})
