"""What the test provider puts in its tokens: the user's profile, e-mail and groups (Django groups'
names) in the ID token and userinfo, and access tokens that are JWTs for the API audience."""

from __future__ import annotations

import time
import uuid
from typing import Any, ClassVar

import jwt
from django.conf import settings
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.utils import jwk_from_pem


class Validator(OAuth2Validator):
    oidc_claim_scope: ClassVar[dict[str, str]] = {**OAuth2Validator.oidc_claim_scope, "groups": "profile"}

    def get_additional_claims(self, request: Any) -> dict[str, Any]:
        user = request.user
        return {
            "email": user.email,
            "email_verified": True,
            "preferred_username": user.username,
            "given_name": user.first_name,
            "family_name": user.last_name,
            "name": f"{user.first_name} {user.last_name}".strip(),
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }


def jwt_access_token(request: Any, refresh_token: bool = False) -> str:
    """An RFC 9068-style access token signed with the current key (as Keycloak, Entra ID issue them)."""
    pem = oauth2_settings.OIDC_RSA_PRIVATE_KEY
    now = int(time.time())
    claims = {
        "iss": settings.ISSUER,
        "aud": settings.API_AUDIENCE,
        "sub": str(request.user.pk),
        "client_id": request.client_id,
        "iat": now,
        "exp": now + 300,
        "jti": str(uuid.uuid4()),
        "scope": " ".join(request.scopes or []),
    }
    headers = {"kid": jwk_from_pem(pem).thumbprint(), "typ": "at+jwt"}
    return jwt.encode(claims, pem, algorithm="RS256", headers=headers)
