"""Programs on /api/v1/: a deactivated user's Aptix API tokens stop working, and with
APTIX_OIDC_API_AUDIENCE set the provider's own JWT access tokens work for users who signed in once,
checked like ID tokens (the real provider issues them through the authorization code flow)."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model

from aptix.tokens import api_token_create
from tests.helpers.oidc import API_AUDIENCE, CLIENT_ID, CLIENT_SECRET, sign_in

PROBE = "/api/v1/turns/0123456789abcdef0123456789abcdef/cancel"  # 404 signed in, 401 not


def call(client, token: str):
    return client.post(PROBE, HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.mark.django_db
def test_a_deactivated_users_api_token_stops_working(client, alice):
    _, secret = api_token_create(user=alice, name="script")
    assert call(client, secret).status_code == 404
    alice.is_active = False
    alice.save()
    assert call(client, secret).status_code == 401


def provider_access_token(provider, username: str) -> str:
    """An access token from the provider's token endpoint, the way a program's own client gets one."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    redirect_uri = "http://127.0.0.1/sign-in/callback/"
    query = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": redirect_uri,
        "scope": "openid",
        "state": "s",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    back = provider.authorize(f"{provider.issuer}/authorize/?{urlencode(query)}", username)
    code = parse_qs(urlsplit(back).query)["code"][0]
    token = requests.post(
        f"{provider.issuer}/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "code_verifier": verifier,
        },
        timeout=10,
    )
    token.raise_for_status()
    return token.json()["access_token"]


@pytest.mark.slow
@pytest.mark.django_db
def test_the_providers_access_tokens_work_for_the_api_audience(client, signing_in, settings, team_a):
    settings.APTIX_OIDC_API_AUDIENCE = API_AUDIENCE
    settings.API_BEARER_FALLBACK = "identity.access_tokens.access_token_user"
    signing_in.user("wes")
    sign_in(client, signing_in, "wes")  # the account exists once its user has signed in
    client.logout()
    token = provider_access_token(signing_in, "wes")
    assert call(client, token).status_code == 404

    now = int(time.time())
    base = {"iss": signing_in.issuer, "sub": signing_in.subjects["wes"], "iat": now, "exp": now + 60}
    assert call(client, signing_in.sign_token({**base, "aud": API_AUDIENCE})).status_code == 404  # the harness
    refused = [
        {**base, "aud": CLIENT_ID},  # another audience
        {**base, "aud": API_AUDIENCE, "exp": now - 3600, "iat": now - 7200},  # expired
        {**base, "aud": API_AUDIENCE, "iss": "http://127.0.0.1:1/o"},  # another issuer
        {**base, "aud": API_AUDIENCE, "nonce": "n"},  # an ID token
        {**base, "aud": API_AUDIENCE, "sub": "nobody-here"},  # never signed in
    ]
    for claims in refused:
        assert call(client, signing_in.sign_token(claims)).status_code == 401, claims

    wes = get_user_model().objects.get(username="wes")
    wes.is_active = False
    wes.save()
    assert call(client, token).status_code == 401  # a leaver's tokens stop with their account


@pytest.mark.slow
@pytest.mark.django_db
def test_without_the_api_audience_the_providers_tokens_are_refused(client, signing_in):
    signing_in.user("xan")
    sign_in(client, signing_in, "xan")
    client.logout()
    assert call(client, provider_access_token(signing_in, "xan")).status_code == 401
